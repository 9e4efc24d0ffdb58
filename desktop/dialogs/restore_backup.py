"""First run on a new computer: restore a backup instead of making an empty store.

The first-run dialog's "Restore from a backup…" ends it with ``RESTORE``; the app
then opens ``RestoreDialog`` through ``restore_flow``: the backup file, what unlocks
it (the passphrase of the day it was taken, or the recovery key; nothing when its
key is in this computer's keychain) and, only for a backup whose key was in another
computer's keychain where this one has none, a passphrase for the restored store.
The restore runs in the host's pool (``engine.restore_backup``: checked whole before
anything is written); then the store opens with what was typed. A failure shows its
message in the same dialog, to try again or go back to the first-run choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop import pickers
from desktop.dialogs.checked import CheckedDialog, password_field
from desktop.messages import error_text
from desktop.qt import (
    QDialogButtonBox,
    QLabel,
    QVBoxLayout,
    QWidget,
)
from engine import looks_like_recovery_key

RESTORE = 2  # FirstRunDialog's result when the user chose to restore a backup


@dataclass(frozen=True)
class RestoreChoice:
    path: str
    passphrase: str | None = None
    recovery_key: str | None = None
    new_passphrase: str | None = None


class RestoreDialog(CheckedDialog):
    def __init__(self, parent: QWidget | None = None, *, note: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore from a backup")
        intro = QLabel("Choose a ctx backup (a .ctxbackup file). It opens with the "
                       "passphrase of the day it was taken, or with your recovery key."
                       + (" " + note if note else ""))
        intro.setWordWrap(True)
        self.path, row = pickers.path_row("the backup file", lambda: pickers.open_file(
            self, "Restore from a backup", "ctx backups (*.ctxbackup);;All files (*)"))
        self.secret = password_field("Passphrase of that day, or the recovery key")
        keychain_note = QLabel("Passphrase of that day, or the recovery key. Leave it empty "
                               "if the backup's key is in this computer's keychain.")
        keychain_note.setWordWrap(True)
        self.new = password_field("A passphrase for this computer (optional)")
        new_note = QLabel("A passphrase for this computer: needed only for a backup whose key "
                          "was in another computer's keychain, where this one has none.")
        new_note.setWordWrap(True)
        self.buttons = QDialogButtonBox()
        self.restore_button = self.buttons.addButton(
            "Restore", QDialogButtonBox.ButtonRole.AcceptRole)
        self.back_button = self.buttons.addButton("Back", QDialogButtonBox.ButtonRole.RejectRole)
        self.buttons.accepted.connect(self._try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(row)
        for w in (keychain_note, self.secret, new_note, self.new, self.error, self.buttons):
            layout.addWidget(w)
        self.setMinimumWidth(520)

    def validate(self) -> str | None:
        path = self.path.text().strip()
        if not path:
            return "Choose the backup file."
        if not Path(path).expanduser().is_file():
            return f"There is no file {path}."
        return None

    def choice(self) -> RestoreChoice:
        typed = self.secret.text()
        recovery = typed if typed and looks_like_recovery_key(typed) else None
        return RestoreChoice(str(Path(self.path.text().strip()).expanduser()),
                             passphrase=typed if typed and recovery is None else None,
                             recovery_key=recovery, new_passphrase=self.new.text() or None)


def restore_flow(host: Any, closed: Callable[[Any], None]) -> RestoreDialog:
    """Open the dialog; restore what it chose into ``host``'s data dir and open it.
    ``closed(result)`` with the engine's RestoreResult once the restore worked (the host
    is opening the store), ``closed(None)`` when the user went back."""
    from engine import restore_backup

    dialog = RestoreDialog()

    def chosen(result: int) -> None:
        if not result:
            closed(None)
            return
        choice = dialog.choice()
        data_dir = host.data_dir

        def done(restored: Any) -> None:
            closed(restored)
            host.start(choice.passphrase or choice.recovery_key or choice.new_passphrase)

        def failed(exc: BaseException) -> None:
            dialog.show_error("Not restored: " + error_text(exc))
            dialog.open()
        host.tasks.run(lambda: restore_backup(
            choice.path, data_dir, passphrase=choice.passphrase,
            recovery_key=choice.recovery_key, new_passphrase=choice.new_passphrase),
            done, failed, name="restore")
    dialog.finished.connect(chosen)
    dialog.open()
    return dialog
