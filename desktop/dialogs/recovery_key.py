"""The recovery key, shown once: Copy, Save as file, and a confirmation that it was kept.

Shown at first run (before the store is made with it) and when Settings -> Security
makes a new one. The dialog cannot be finished until the box "I have kept my recovery
key" is ticked; ctx keeps no copy of the key, so this is the only time it is seen.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from desktop import pickers
from desktop.icons import app_icon
from desktop.qt import (
    QApplication,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import heading, monospace

WHAT_IT_IS = (
    "This recovery key unlocks your ctx store by itself: if the OS keychain loses the key "
    "(a new computer, a reset keychain) or you forget your passphrase, it is the only way "
    "back in, and it opens backups taken from now on. ctx keeps no copy and will not show "
    "it again. Write it down, or keep it in a password manager, somewhere other than this "
    "computer. Anyone who has it can read your store.")

FILE_TEXT = """ctx recovery key
{key}

It unlocks the ctx store in {where} by itself, and the backups taken from it.
Keep this file somewhere other than that computer (a password manager, a USB key
in a drawer); anyone who has it can read the store. To use it:
    ctx restore BACKUP --recovery-key-stdin
or type it where ctx asks for the passphrase.
"""


def save_key_file(path: Path, key: str, where: str) -> None:
    """Write the key and what it is for to ``path``, readable by its owner alone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(FILE_TEXT.format(key=key, where=where))


class RecoveryKeyDialog(QDialog):
    """Show ``key``; accept() only once the user says they kept it."""

    def __init__(self, key: str, data_dir: str | Path, parent: QWidget | None = None, *,
                 title: str = "Your recovery key") -> None:
        super().__init__(parent)
        self.key = key
        self.data_dir = str(data_dir)
        self.setWindowTitle(title)
        title_label = heading("Save your recovery key now")
        intro = QLabel(WHAT_IT_IS)
        intro.setWordWrap(True)
        self.key_label = QLabel(key)
        font = monospace()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        self.key_label.setFont(font)
        self.key_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.key_label.setFrameShape(QFrame.Shape.StyledPanel)
        self.key_label.setContentsMargins(12, 10, 12, 10)
        self.key_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_button = QPushButton("Copy")
        self.save_button = QPushButton("Save as file…")
        self.copy_button.clicked.connect(self.copy)
        self.save_button.clicked.connect(self._pick_file)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.copy_button)
        row.addWidget(self.save_button)
        row.addStretch(1)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setMinimumHeight(2 * self.note.fontMetrics().lineSpacing() + 4)  # Copy, Save
        self.kept = QCheckBox("I have kept my recovery key somewhere safe")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.continue_button = self.buttons.addButton(
            "Continue", QDialogButtonBox.ButtonRole.AcceptRole)
        self.continue_button.setEnabled(False)
        self.kept.toggled.connect(self.continue_button.setEnabled)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for w in (title_label, intro, self.key_label):
            layout.addWidget(w)
        layout.addLayout(row)
        for widget in (self.note, self.kept, self.buttons):
            layout.addWidget(widget)
        width = max(640, self.key_label.sizeHint().width() + 60)
        self.setMinimumWidth(width)
        self.resize(width, layout.totalHeightForWidth(width))

    def copy(self) -> None:
        QApplication.clipboard().setText(self.key)
        self.note.setText("Copied. Paste it into your password manager now; the clipboard "
                          "may be read by other programs, so copy something else after.")

    def save(self, path: str | Path) -> None:
        try:
            save_key_file(Path(path), self.key, self.data_dir)
        except OSError as exc:
            self.note.setText(f"Not saved: {exc.strerror or type(exc).__name__}.")
            return
        self.note.setText(f"Saved to {path} (readable by you alone). Move it off this "
                          "computer: kept beside the store, it protects nothing.")

    def _pick_file(self) -> None:
        path = pickers.save_file(self, "Save the recovery key", "ctx-recovery-key.txt")
        if path:
            self.save(path)

    def _try_accept(self) -> None:
        if self.kept.isChecked():
            self.accept()


def ask_to_keep_new_key(data_dir: str | Path, done: Callable[[str | None], None],
                        parent: QWidget | None = None) -> RecoveryKeyDialog:
    """First run: make a recovery key and show it (non-modal to the event loop);
    ``done(key)`` once the user says it was kept, ``done(None)`` if they cancel."""
    from engine import generate_recovery_key

    key = generate_recovery_key()
    dialog = RecoveryKeyDialog(key, data_dir, parent)
    dialog.setWindowIcon(app_icon())
    dialog.finished.connect(lambda result: done(key if result else None))
    dialog.open()
    return dialog
