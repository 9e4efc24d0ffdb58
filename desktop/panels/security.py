"""Settings -> Security: how the data key is kept, backups, export, and the backup schedule.

What ``ctx key ...``, ``ctx backup``, ``ctx export`` do, from the app:

- the protection (OS keychain or passphrase) and whether a recovery key exists, with
  Change passphrase, Use the OS keychain, Use a passphrase, New recovery key and Rotate
  the data key. All but the rotation rewrap the key in key.json while the engine runs;
  a rotation is the running engine's job (kind "rotate"): the new key is made and
  wrapped here (``prepare_rotation``, where the passphrase is), the engine moves the
  store to it while searches go on, and its progress shows in the banner (a store
  whose vectors are kept in Chroma is closed, rekeyed and opened again instead);
- Back up now, Check a backup, Restore from a backup (the engine closed meanwhile,
  the store replaced kept aside), Export (after a warning that the text leaves the
  encryption); the date of the last backup;
- scheduled backups (off by default; ``schedule_box.ScheduleBox``), and a banner that
  says what runs (one operation at a time: the buttons wait) and how it went.

Every operation runs in the host's pool; ``finished(operation, ok, message)`` says how it
went (the banner shows it too). The ``do_*`` methods take what the dialogs collect, so
tests drive them without a dialog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop import pickers
from desktop.dialogs.restore_backup import RestoreDialog
from desktop.dialogs.secrets import SecretDialog, Secrets
from desktop.messages import error_text
from desktop.panels.schedule_box import ScheduleBox
from desktop.qt import (
    QGroupBox,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
    Signal,
)
from desktop.widgets import Banner, fmt_time, heading, muted
from engine import keychain_available
from ipc.status_text import progress_text

EXPORT_WARNING = (
    "An export writes your sources as plaintext files: there they leave ctx's encryption, "
    "and anyone who can read them can read your text (backups, sync folders and other "
    "users of this computer included). Delete the export when you no longer need it.")
ROTATE_TEXT = (
    "A new data key replaces the current one: the vault is written again under it and the "
    "vectors sealed again (a few seconds per 100,000 chunks) while searches go on; new "
    "writes wait until it ends. Backups taken before keep opening with the passphrase or "
    "recovery key of their day.")
RESTORE_NOTE = ("The store is closed and replaced by the backup's; the store it "
                "replaces is kept beside it, never deleted.")


class SecurityPanel(QWidget):
    finished = Signal(str, bool, str)  # operation, ok, message

    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.status: Any = None
        self.busy = ""  # the operation running, if any
        self.secret_dialog: Any = None  # the key-change dialog open now, if any
        self.banner = Banner(self)
        self.protection = muted("")
        self.last_backup = muted("")
        self.buttons: dict[str, QPushButton] = {}
        keys = QGroupBox("The data key")
        col = QVBoxLayout(keys)
        col.addWidget(self.protection)
        col.addLayout(self._button_row((
            ("passphrase", "Change passphrase…", self.ask_change_passphrase),
            ("use-keychain", "Use the OS keychain", self.ask_use_keychain),
            ("use-passphrase", "Use a passphrase…", self.ask_use_passphrase),
            ("recovery", "New recovery key…", self.ask_new_recovery_key),
            ("rotate", "Rotate the data key…", self.ask_rotate))))
        backups = QGroupBox("Backups and export")
        col = QVBoxLayout(backups)
        col.addWidget(self.last_backup)
        col.addLayout(self._button_row((
            ("backup", "Back up now…", self.ask_backup),
            ("verify", "Check a backup…", self.ask_verify),
            ("restore", "Restore from a backup…", self.ask_restore),
            ("export", "Export as plaintext…", self.ask_export))))
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(heading("Security"))
        top.addWidget(self.banner, 1)  # messages beside the title: no band of their own
        layout.addLayout(top)
        self.schedule_box = ScheduleBox()
        self.schedule_box.save_button.clicked.connect(self.save_schedule)
        box = self.schedule_box
        self.schedule, self.folder, self.keep, self.every = (box.schedule, box.folder,
                                                             box.keep, box.every)
        for group in (keys, backups, self.schedule_box):
            group.setMaximumWidth(860)
            layout.addWidget(group)
        layout.addStretch(1)
        host.ready.connect(self.refresh)
        host.config_changed.connect(self.load_schedule)
        host.job_progress.connect(self._job_moved)
        self.load_schedule()
        if getattr(host, "engine_ready", False):
            self.refresh()

    def _button_row(self, buttons: Any) -> QHBoxLayout:
        row = QHBoxLayout()
        for name, text, slot in buttons:
            button = QPushButton(text)
            button.clicked.connect(slot)
            self.buttons[name] = button
            row.addWidget(button)
        row.addStretch(1)
        return row

    # -- the schedule ------------------------------------------------------------------
    def load_schedule(self) -> None:
        self.schedule_box.load(self.host.data_dir)

    def save_schedule(self) -> bool:
        problem = self.schedule_box.save(self.host.data_dir)
        if problem is not None:
            self._said("schedule", False, "Schedule not saved: " + problem)
            return False
        self._said("schedule", True, "Schedule saved." if self.schedule.isChecked()
                   else "Scheduled backups are off.")
        reload = getattr(self.host, "reload_config", None)
        if reload is not None:
            reload()
        return True

    # -- state -------------------------------------------------------------------------
    def refresh(self) -> None:
        self.host.run(lambda e: e.status(), self._status, lambda exc: None,
                      name="security_status")

    def _status(self, status: Any) -> None:
        self.status = status
        method = getattr(status, "key_method", "")
        where = {"keychain": "The data key is kept in the OS keychain.",
                 "passphrase": "The data key is kept under your passphrase."}.get(method, "")
        recovery = ("A recovery key can unlock the store." if status.recovery_key else
                    "There is NO recovery key: if the key is lost, so is the store. "
                    "Make one now.")
        self.protection.setText(f"{where} {recovery}".strip())
        self.last_backup.setText("Last backup: " + (fmt_time(status.last_backup)
                                                    if status.last_backup else "never"))
        self._enable()

    def _enable(self) -> None:
        """Buttons that apply now: none while an operation runs, else by the key's method."""
        method = getattr(self.status, "key_method", "")
        keychain = keychain_available()
        for button in self.buttons.values():
            button.setEnabled(not self.busy)
        if not self.busy:
            self.buttons["passphrase"].setEnabled(method == "passphrase")
            self.buttons["use-passphrase"].setEnabled(method == "keychain")
            self.buttons["use-keychain"].setEnabled(keychain)
        self.buttons["use-keychain"].setToolTip("" if keychain else
                                                "No OS keychain can be used on this system.")

    def _begin(self, operation: str, text: str) -> None:
        """An operation starts: say so, and no other until it ends (``_said``)."""
        self.busy = operation
        self.banner.show_message("info", text)
        self._enable()

    def _job_moved(self, job: Any) -> None:
        """A backup, a check or a key rotation started here moves: its progress in this
        tab's banner, in
        the engine's words (the only place it is told: it is the user's own operation)."""
        kind = {"backup": "backup", "verify": "verify_backup",
                "rotate": "rotate"}.get(self.busy)
        if kind is None or job.kind != kind or job.final:
            return
        words = progress_text(job)
        self.banner.show_message("info", words[:1].upper() + words[1:] + "…")

    def _said(self, operation: str, ok: bool, message: str) -> None:
        self.busy = ""
        self._enable()
        self.banner.show_message("ok" if ok else "error", message)
        self.finished.emit(operation, ok, message)

    def _key_change(self, operation: str, fn: Any, done: str, finish: Any = None,
                    **kwargs: Any) -> None:
        """Run a key.json change in the pool (the engine keeps running meanwhile);
        ``finish(problem or None)`` tells the dialog that asked, which stays open on a
        problem (a wrong current passphrase) with what was typed."""
        data_dir = self.host.data_dir
        self._begin(operation, "Changing how the data key is kept…")

        def ok(result: Any) -> None:
            if finish is not None:
                finish(None)
            self._said(operation, True, done)
            if getattr(result, "recovery_key", ""):
                self.show_recovery_key(result.recovery_key)
            self.refresh()

        def failed(exc: BaseException) -> None:
            message = error_text(exc)
            if finish is not None:
                finish(message)
            self._said(operation, False, message)
        self.host.tasks.run(lambda: fn(data_dir, **kwargs), ok, failed, name=operation)

    def show_recovery_key(self, key: str) -> None:
        from desktop.dialogs.recovery_key import RecoveryKeyDialog

        dialog = RecoveryKeyDialog(key, self.host.data_dir, self, title="Your new recovery key")
        dialog.open()
        self.recovery_dialog = dialog

    # -- key changes: what the dialogs collect goes to do_* ------------------------------
    def _ask(self, title: str, text: str, *, current: bool, new: bool,
             optional: bool = False) -> Secrets | None:
        dialog = SecretDialog(title, text, current=current, new=new, optional=optional,
                              parent=self)
        return dialog.secrets() if dialog.exec() else None

    def _ask_current(self, title: str, text: str) -> Secrets | None:
        """The current secret, asked for; none needed (empty Secrets) when the key is in
        the OS keychain; None when the person cancelled."""
        if getattr(self.status, "key_method", "") == "keychain":
            return Secrets()
        return self._ask(title, text, current=True, new=False)

    def _ask_then(self, title: str, text: str, do: Any, *, current: bool, new: bool
                  ) -> SecretDialog:
        """A secrets dialog that runs ``do(secrets, finish)`` while it stays open, so a
        wrong current passphrase is said there and nothing typed is lost."""
        dialog = SecretDialog(title, text, current=current, new=new, parent=self)
        dialog.run = do
        self.secret_dialog = dialog
        dialog.open()
        return dialog

    def ask_change_passphrase(self) -> None:
        self._ask_then("Change passphrase", "Type the current passphrase (or the recovery "
                       "key), then the new one twice.", self.do_change_passphrase,
                       current=True, new=True)

    def do_change_passphrase(self, got: Secrets, finish: Any = None) -> None:
        from engine import change_passphrase

        self._key_change("passphrase", change_passphrase, "The passphrase was changed.",
                         finish, new=got.new_passphrase, passphrase=got.passphrase,
                         recovery_key=got.recovery_key)

    def ask_use_keychain(self) -> None:
        got = self._ask_current("Use the OS keychain", "Type the current passphrase (or the "
                                "recovery key): the key then goes into the OS keychain.")
        if got is not None:
            self.do_use_keychain(got)

    def do_use_keychain(self, got: Secrets) -> None:
        from engine import use_keychain

        self._key_change("use-keychain", use_keychain,
                         "The data key is now kept in the OS keychain.",
                         passphrase=got.passphrase, recovery_key=got.recovery_key)

    def ask_use_passphrase(self) -> None:
        got = self._ask("Use a passphrase", "Choose a passphrase, typed twice. ctx cannot "
                        "recover a forgotten passphrase: keep your recovery key.",
                        current=False, new=True)
        if got is not None:
            self.do_use_passphrase(got)

    def do_use_passphrase(self, got: Secrets) -> None:
        from engine import use_passphrase

        self._key_change("use-passphrase", use_passphrase,
                         "The data key is now kept under your passphrase.",
                         new=got.new_passphrase, passphrase=got.passphrase,
                         recovery_key=got.recovery_key)

    def ask_new_recovery_key(self) -> None:
        got = self._ask_current("New recovery key", "Type the passphrase. The new recovery "
                                "key replaces the old one, which then stops opening the store.")
        if got is not None:
            self.do_new_recovery_key(got)

    def do_new_recovery_key(self, got: Secrets) -> None:
        from engine import renew_recovery_key

        self._key_change("recovery", renew_recovery_key,
                         "A new recovery key was made; the old one no longer opens the store.",
                         passphrase=got.passphrase, recovery_key=got.recovery_key)

    def ask_rotate(self) -> None:
        method = getattr(self.status, "key_method", "")
        if method == "passphrase":
            got = self._ask("Rotate the data key", ROTATE_TEXT + "\n\nType the passphrase: "
                            "the new key is wrapped under it.", current=True, new=False)
        else:
            answer = QMessageBox.question(self, "Rotate the data key", ROTATE_TEXT)
            got = Secrets() if answer == QMessageBox.StandardButton.Yes else None
        if got is not None:
            self.do_rotate(got)

    def do_rotate(self, got: Secrets) -> None:
        """The running engine rotates the key as a job (reads go on; its progress in the
        banner, ``_job_moved``): the new key is made and wrapped here first
        (``prepare_rotation``: the passphrase stays in the app). A store whose vectors
        are kept in Chroma cannot be rotated online: it is closed, rotated and opened."""
        from engine import prepare_rotation

        if getattr(self.status, "vector_backend", "memory") != "memory":
            self._rotate_closed(got)
            return
        data_dir = self.host.data_dir
        self._begin("rotate", "Rotating the data key…")

        def done(result: Any) -> None:
            self._said("rotate", True, f"The data key was rotated ({result.old_key_id} → "
                                       f"{result.key_id}).")
            self.refresh()

        def failed(exc: BaseException) -> None:
            self._said("rotate", False, "Not rotated: " + error_text(exc))

        def prepared(_key_id: str) -> None:
            self.host.run(lambda e: e.rotate_key(), done, failed, name="rotate_key")
        self.host.tasks.run(lambda: prepare_rotation(data_dir, passphrase=got.passphrase,
                                                     recovery_key=got.recovery_key),
                            prepared, failed, name="prepare_rotation")

    def _rotate_closed(self, got: Secrets) -> None:
        """Close the engine, rotate, open it again (with the passphrase typed, if any)."""
        from engine import rotate_key

        data_dir = self.host.data_dir
        self._while_closed(
            "rotate", lambda: rotate_key(data_dir, passphrase=got.passphrase,
                                         recovery_key=got.recovery_key),
            lambda r: f"The data key was rotated ({r.old_key_id} → {r.key_id}).",
            "Not rotated: ", got.passphrase or got.recovery_key)

    def _while_closed(self, operation: str, work: Any, ok_text: Any, fail_text: str,
                      reopen_with: str | None) -> None:
        """Close the engine, run ``work`` in the pool, say how it went, open it again: with
        ``reopen_with`` after it worked; as at launch (keychain, environment, or the unlock
        dialog) when it did not, since what was typed may be what was wrong."""
        def when_stopped(state: str) -> None:
            if state != "stopped":
                return
            self.host.state_changed.disconnect(when_stopped)

            def reopen(ok: bool, message: str) -> None:
                self._said(operation, ok, message)
                self.host.start(reopen_with if ok else None)
            self.host.tasks.run(work, lambda r: reopen(True, ok_text(r)),
                                lambda exc: reopen(False, fail_text + error_text(exc)),
                                name=operation)
        self._begin(operation, "Closing the store to " + ("restore the backup…"
                    if operation == "restore" else "rotate its data key…"))
        self.host.state_changed.connect(when_stopped)
        self.host.shutdown()

    def ask_restore(self) -> None:
        """The first run's restore dialog: the file, the secret of its day, and a
        passphrase for this computer when the backup's key was another's keychain."""
        dialog = RestoreDialog(self, note=RESTORE_NOTE)
        if not dialog.exec():
            return
        choice = dialog.choice()
        self.do_restore(choice.path, Secrets(passphrase=choice.passphrase,
                                             recovery_key=choice.recovery_key,
                                             new_passphrase=choice.new_passphrase))

    def do_restore(self, path: str, got: Secrets) -> None:
        """Close the engine, restore ``path`` over the store (kept aside), open it again."""
        from engine import restore_backup

        data_dir = self.host.data_dir
        self._while_closed(
            "restore", lambda: restore_backup(path, data_dir, replace=True,
                                              passphrase=got.passphrase,
                                              recovery_key=got.recovery_key,
                                              new_passphrase=got.new_passphrase),
            lambda r: f"Restored the backup of {fmt_time(r.created)}: {r.sources} sources."
            + (f" The store it replaced is kept in {r.replaced}." if r.replaced else ""),
            "Not restored (the store is as it was): ",
            got.passphrase or got.recovery_key or got.new_passphrase)

    # -- backups and export ------------------------------------------------------------
    def ask_backup(self) -> None:
        folder = pickers.folder(self, "Back up into this folder")
        if folder:
            self.do_backup(folder)

    def do_backup(self, path: str) -> None:
        self._begin("backup", "Backing up…")  # its progress follows here (_job_moved)
        def done(result: Any) -> None:
            self._said("backup", True, f"Backed up to {result.path}.")
            self.refresh()

        self.host.run(lambda e: e.backup(path), done,
                      lambda exc: self._said("backup", False, "Not backed up: "
                                             + error_text(exc)), name="backup")

    def ask_verify(self) -> None:
        path = pickers.open_file(self, "Check a backup",
                                 "ctx backups (*.ctxbackup);;All files (*)")
        if path:
            self.do_verify(path)

    def do_verify(self, path: str) -> None:
        self._begin("verify", "Checking the backup…")
        self.host.run(lambda e: e.verify_backup(path),
                      lambda r: self._said("verify", True, f"The backup is whole: {r.sources} "
                                           f"sources, taken {fmt_time(r.created)}."),
                      lambda exc: self._said("verify", False, error_text(exc)),
                      name="verify_backup")

    def export_box(self) -> tuple[QMessageBox, Any, Any]:
        """The export's warning: (box, its JSON lines button, its Markdown button). Enter
        or Escape is Cancel: the text leaves the encryption only by a deliberate click."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Export as plaintext", EXPORT_WARNING,
                          parent=self)
        jsonl = box.addButton("One JSON lines file…", QMessageBox.ButtonRole.AcceptRole)
        md = box.addButton("A folder of Markdown files…", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        for button in (jsonl, md):
            button.setAutoDefault(False)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        return box, jsonl, md

    def ask_export(self) -> None:
        box, jsonl, md = self.export_box()
        box.exec()
        if box.clickedButton() is jsonl:
            path = pickers.save_file(self, "Export to", "ctx-export.jsonl")
            if path:
                self.do_export(path, "jsonl")
        elif box.clickedButton() is md:
            path = pickers.folder(self, "Export into this (empty) folder")
            if path:
                self.do_export(path, "markdown")

    def do_export(self, path: str, fmt: str) -> None:
        self._begin("export", "Exporting…")
        self.host.run(lambda e: e.export(path, fmt=fmt),
                      lambda r: self._said("export", True, f"Exported {r.sources} sources to "
                                           f"{Path(r.path)} as plaintext."),
                      lambda exc: self._said("export", False, "Not exported: "
                                             + error_text(exc)), name="export")
