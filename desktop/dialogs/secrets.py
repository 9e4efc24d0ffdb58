"""Asking for the secrets a key change needs: the current passphrase (or the recovery key),
and a new passphrase typed twice with the first-run dialog's strength hint.

The dialog only collects; Settings -> Security runs the change in the pool and says
how it went. Nothing typed here is kept after the dialog closes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from desktop.appearance import paint_tone
from desktop.dialogs.checked import CheckedDialog, password_field
from desktop.dialogs.first_run import strength
from desktop.qt import QDialogButtonBox, QLabel, QVBoxLayout, QWidget
from engine import looks_like_recovery_key


@dataclass(frozen=True)
class Secrets:
    """What was typed: the current passphrase or the recovery key (which one is told by
    its shape), and the new passphrase."""

    passphrase: str | None = None
    recovery_key: str | None = None
    new_passphrase: str | None = None


class SecretDialog(CheckedDialog):
    """``current``: ask for the passphrase (or recovery key) that unlocks the store now;
    ``new``: ask for a new passphrase, twice; ``optional``: the current one may be empty."""

    def __init__(self, title: str, text: str, *, current: bool, new: bool,
                 optional: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.optional = optional  # the current secret may be left empty (a keychain key)
        self.setWindowTitle(title)
        intro = QLabel(text)
        intro.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        self.current = password_field("Current passphrase, or the recovery key") if current else None
        self.new = password_field("New passphrase") if new else None
        self.confirm = password_field("New passphrase again") if new else None
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        for w in (self.current, self.new, self.confirm):
            if w is not None:
                layout.addWidget(w)
        if self.new is not None:
            self.new.textChanged.connect(self._update)
            layout.addWidget(self.hint)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        # ``run(secrets, finish)``, when set, does the change while the dialog stays open:
        # ``finish(None)`` closes it; ``finish(problem)`` shows the problem and keeps what
        # was typed (the new passphrase twice), the current one cleared for another try.
        self.run: Callable[[Secrets, Callable[[str | None], None]], None] | None = None
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self._update()
        self.resize(480, self.sizeHint().height())

    def _update(self, *_: object) -> None:
        if self.new is not None:
            score, hint = strength(self.new.text())
            words = ["Weak", "Fair", "Good", "Strong"]
            self.hint.setText(f"Strength: {words[score]}. {hint}".strip()
                              if self.new.text() else hint)

    def validate(self) -> str | None:
        """The problem with what was typed, or None."""
        if self.current is not None and not self.current.text() and not self.optional:
            return "Type the current passphrase, or the recovery key."
        if self.new is not None and self.confirm is not None:
            score, hint = strength(self.new.text())
            if score == 0:
                return hint
            if self.new.text() != self.confirm.text():
                return "The two new passphrases differ."
        return None

    def _try_accept(self) -> None:
        problem = self.validate()
        if problem:
            self.show_error(problem)
            return
        if self.run is None:
            self.accept()
            return
        self._busy(True)
        self.run(self.secrets(), self._finished)

    def _busy(self, busy: bool) -> None:
        self.buttons.setEnabled(not busy)
        for field in (self.current, self.new, self.confirm):
            if field is not None:
                field.setEnabled(not busy)
        if busy:
            paint_tone(self.error, "")
            self.error.setText("Checking…")
            self.error.show()

    def _finished(self, problem: str | None) -> None:
        self._busy(False)
        if problem is None:
            self.accept()
            return
        self.show_error(problem)
        if self.current is not None:
            self.current.clear()
            self.current.setFocus()

    def secrets(self) -> Secrets:
        typed = self.current.text() if self.current is not None else ""
        recovery = typed if typed and looks_like_recovery_key(typed) else None
        passphrase = typed if typed and recovery is None else None
        return Secrets(passphrase=passphrase, recovery_key=recovery,
                       new_passphrase=self.new.text() if self.new is not None else None)
