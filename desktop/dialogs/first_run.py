"""First run: create the store (OS keychain where one works, else a passphrase with a
confirmation and a strength hint), and offer folders to index and coding-session sync.

The dialog only collects choices; the app hands them to ``EngineHost.create_store``
(in the pool) and reports failures through the host's signals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from desktop import pickers
from desktop.dialogs.checked import CheckedDialog
from desktop.qt import (
    QCheckBox,
    QDialogButtonBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)
from engine import keychain_available

MIN_PASSPHRASE = 10


def strength(passphrase: str) -> tuple[int, str]:
    """A rough score 0-3 and a hint: length counts most, then variety of characters."""
    if not passphrase:
        return 0, f"At least {MIN_PASSPHRASE} characters; four or more random words work well."
    classes = sum(any(test(c) for c in passphrase) for test in
                  (str.islower, str.isupper, str.isdigit, lambda c: not c.isalnum()))
    words = len(passphrase.split())
    n = len(passphrase)
    if n < MIN_PASSPHRASE:
        return 0, f"Too short: at least {MIN_PASSPHRASE} characters."
    if len(set(passphrase)) <= 3:
        return 0, "Too repetitive: use different characters or words."
    score = min(3, 1 + (n >= 16 or words >= 4) + (n >= 24 or (n >= 14 and classes >= 3)))
    hints = {1: "Longer is stronger: four or more random words.",
             2: "A few more characters make it strong.", 3: ""}
    return score, hints[score]


@dataclass
class FirstRunChoice:
    use_keychain: bool
    passphrase: str | None
    folders: list[str] = field(default_factory=list)
    sync_sessions: bool = False


class FirstRunDialog(CheckedDialog):
    """Choose how the store is protected, folders to index and coding-session sync."""

    def __init__(self, parent: QWidget | None = None, *, keychain: bool | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up ctx")
        self.keychain = keychain_available() if keychain is None else keychain
        intro = QLabel("ctx keeps your documents, notes and coding sessions encrypted on this "
                       "computer. Choose how the store's key is protected.")
        intro.setWordWrap(True)

        protect = QGroupBox("Protection")
        self.use_keychain = QRadioButton("Keep the key in the OS keychain (recommended)")
        self.use_passphrase = QRadioButton("Protect the key with a passphrase")
        self.use_keychain.setEnabled(self.keychain)
        (self.use_keychain if self.keychain else self.use_passphrase).setChecked(True)
        self.no_keychain_note = QLabel("No OS keychain is available here: a passphrase is "
                                       "needed. The recovery key shown next is the only "
                                       "way back in if you forget it.")
        self.no_keychain_note.setWordWrap(True)
        self.no_keychain_note.setVisible(not self.keychain)
        self.passphrase = QLineEdit()
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("Passphrase")
        self.confirm = QLineEdit()
        self.confirm.setEchoMode(QLineEdit.EchoMode.Password)
        self.confirm.setPlaceholderText("Passphrase again")
        self.strength_label = QLabel()
        self.strength_label.setWordWrap(True)
        box = QVBoxLayout(protect)
        for w in (self.use_keychain, self.use_passphrase, self.no_keychain_note,
                  self.passphrase, self.confirm, self.strength_label):
            box.addWidget(w)

        index = QGroupBox("Index now (optional)")
        self.folders = QListWidget()
        self.folders.setMaximumHeight(90)
        add = QPushButton("Add folder...")
        add.clicked.connect(self._add_folder)
        remove = QPushButton("Remove")
        remove.clicked.connect(self._remove_folder)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        self.sync = QCheckBox("Sync coding sessions (Claude Code and Codex transcripts)")
        col = QVBoxLayout(index)
        col.addWidget(QLabel("Folders to index:"))
        col.addWidget(self.folders)
        col.addLayout(buttons)
        col.addWidget(self.sync)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.addButton(
            "Create store", QDialogButtonBox.ButtonRole.AcceptRole)
        self.restore_button = self.buttons.addButton(  # ends the dialog with RESTORE (2)
            "Restore from a backup…", QDialogButtonBox.ButtonRole.ResetRole)
        self.restore_button.clicked.connect(lambda: self.done(2))
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        for widget in (intro, protect, index, self.error, self.buttons):
            layout.addWidget(widget)
        for signal in (self.passphrase.textChanged, self.confirm.textChanged,
                       self.use_keychain.toggled):
            signal.connect(self._update)
        self._update()
        if not self.keychain:
            self.passphrase.setFocus()  # the one thing to do first: type it
        self.resize(520, self.sizeHint().height())

    def _update(self, *_: Any) -> None:
        manual = self.use_passphrase.isChecked()
        for w in (self.passphrase, self.confirm, self.strength_label):
            w.setEnabled(manual)
        score, hint = strength(self.passphrase.text())
        words = ["Weak", "Fair", "Good", "Strong"]
        if self.passphrase.text():
            self.strength_label.setText(f"Strength: {words[score]}. {hint}".strip())
        else:
            self.strength_label.setText(hint)
        self.error.hide()

    def add_folder(self, path: str) -> None:
        if path and not self.folders.findItems(path, self._exact()):
            self.folders.addItem(path)

    @staticmethod
    def _exact() -> Any:
        from desktop.qt import Qt

        return Qt.MatchFlag.MatchExactly

    def _add_folder(self) -> None:
        self.add_folder(pickers.folder(self, "Folder to index"))

    def _remove_folder(self) -> None:
        for item in self.folders.selectedItems():
            self.folders.takeItem(self.folders.row(item))

    def validate(self) -> str | None:
        """The problem with the current choices, or None when they can be used."""
        if self.use_keychain.isChecked():
            return None
        text = self.passphrase.text()
        score, hint = strength(text)
        if score == 0:
            return hint
        if text != self.confirm.text():
            return "The two passphrases differ."
        return None

    def choice(self) -> FirstRunChoice:
        keychain = self.use_keychain.isChecked()
        return FirstRunChoice(
            use_keychain=keychain, passphrase=None if keychain else self.passphrase.text(),
            folders=[self.folders.item(i).text() for i in range(self.folders.count())],
            sync_sessions=self.sync.isChecked())
