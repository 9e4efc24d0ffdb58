"""Unlock: ask for the store's passphrase when the keychain or environment cannot unlock it.

The dialog drives ``EngineHost.unlock`` (which opens the store in the pool)
and stays open until the host is ready. A wrong passphrase is a clear message,
the field is cleared for another try, and nothing on disk changes (the engine
only reads the key record to check a passphrase).
"""

from __future__ import annotations

from typing import Any

from desktop.appearance import paint_tone
from desktop.notices import Failure
from desktop.qt import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QPalette,
    QVBoxLayout,
    QWidget,
)


class UnlockDialog(QDialog):
    """Passphrase entry wired to ``host``: accept() once the host is ready."""

    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.setWindowTitle("Unlock ctx")
        intro = QLabel("This ctx store is protected by a passphrase. Its recovery key opens "
                       "it too (in any case; the letter O may be typed as 0).")
        intro.setWordWrap(True)
        where = QLabel(str(host.data_dir))
        where.setWordWrap(True)
        where.setForegroundRole(QPalette.ColorRole.PlaceholderText)  # muted, 4.5:1 or more
        self.passphrase = QLineEdit()
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("Passphrase or recovery key")
        self.message = QLabel()
        self.message.setWordWrap(True)
        # Its two lines are kept while it is empty: a message never moves the field.
        policy = self.message.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.message.setSizePolicy(policy)
        self.message.setMinimumHeight(self.message.fontMetrics().lineSpacing() * 2)
        self.message.hide()
        self.buttons = QDialogButtonBox()
        self.unlock_button = self.buttons.addButton(
            "Unlock", QDialogButtonBox.ButtonRole.AcceptRole)
        self.quit_button = self.buttons.addButton(
            "Quit ctx", QDialogButtonBox.ButtonRole.RejectRole)
        self.buttons.accepted.connect(self.try_unlock)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for w in (intro, where, self.passphrase, self.message, self.buttons):
            layout.addWidget(w)
        host.failed.connect(self._failed)
        host.ready.connect(self._ready)
        self._connected = True
        self.setMinimumSize(460, 200)

    def try_unlock(self) -> None:
        text = self.passphrase.text()
        if not text:
            self._say("Type the passphrase first.", error=True)
            return
        self._busy(True)
        self._say("Unlocking...", error=False)
        self.host.unlock(text)

    def _busy(self, busy: bool) -> None:
        self.passphrase.setEnabled(not busy)
        self.unlock_button.setEnabled(not busy)

    def _say(self, text: str, *, error: bool) -> None:
        paint_tone(self.message, "error" if error else "")
        self.message.setText(text)
        self.message.show()

    def _failed(self, failure: Failure) -> None:
        if failure.operation != "open" or not self.isVisible():
            return
        self._busy(False)
        if failure.error.name not in ("wrong_key", "recovery_key_invalid"):
            # The passphrase was right; something else stopped the store from opening:
            # the window's page says what and offers the way out. This dialog's part is done.
            self.accept()
            return
        self._say("Wrong passphrase or recovery key. Nothing was changed: try again.",
                  error=True)
        self.passphrase.clear()
        self.passphrase.setFocus()

    def _ready(self) -> None:
        if self.isVisible():
            self.accept()

    def done(self, result: int) -> None:
        if self._connected:
            self._connected = False
            self.host.failed.disconnect(self._failed)
            self.host.ready.disconnect(self._ready)
        super().done(result)
