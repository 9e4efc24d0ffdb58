"""The app's dialogs before the store is open: first-run set-up (or a restore from a
backup, with the recovery key shown and kept first) and unlock. A mixin of
:class:`desktop.app.App`, whose state it keeps.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from desktop.icons import app_icon


def say(text: str) -> None:
    """One line on stderr, as the app logs its steps (desktop.app.say)."""
    print(f"ctx-app: {text}", file=sys.stderr, flush=True)


def restored_text(result: Any) -> str:
    """The sentence the window opens with after a first-run restore."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(result.created))
    n = int(result.sources)
    return (f"Restored the backup of {when}: {n:,} source{'s' if n != 1 else ''}, "
            "searchable now (see Sources).")


class SetupFlow:
    """Set-up and unlock dialogs (the attributes are App's)."""

    host: Any
    dialog: Any
    data_dir: Any
    quitting: bool
    pending_ingest: list[str]
    sync_after_setup: bool
    show_when_ready: bool
    welcome: str  # said in the window's banner when it opens (a restore), else ""
    quit_now: Any
    show_window: Any

    def _ask_setup(self) -> None:
        from desktop.dialogs.first_run import FirstRunDialog

        if self.dialog is not None:
            self.dialog.raise_()
            return
        self.dialog = FirstRunDialog()
        self.dialog.setWindowIcon(app_icon())
        self.dialog.finished.connect(self._setup_done)
        self.dialog.open()

    def _setup_done(self, result: int) -> None:
        dialog, self.dialog = self.dialog, None
        if self.quitting or dialog is None:
            return
        from desktop.dialogs.restore_backup import RESTORE, restore_flow

        if result == RESTORE:  # a backup instead of a new store
            self.dialog = restore_flow(self.host, self._restore_closed)
            return
        if not result:
            say("setup cancelled")
            self.quit_now()
            return
        choice = dialog.choice()
        from desktop.dialogs.recovery_key import ask_to_keep_new_key

        # the recovery key is shown (and kept) before the store is made with it
        self.dialog = ask_to_keep_new_key(self.data_dir,
                                          lambda key: self._recovery_kept(choice, key))

    def _restore_closed(self, restored: Any) -> None:
        """The restore dialog closed: back to the choices, or (``restored``: the engine's
        RestoreResult) the window opens once the store is, saying what came back."""
        self.dialog = None
        if restored is None:
            if not self.quitting:
                self._ask_setup()
            return
        self.show_when_ready = True
        self.welcome = restored_text(restored)

    def _recovery_kept(self, choice: Any, key: str | None) -> None:
        self.dialog = None
        if self.quitting:
            return
        if key is None:  # not kept: back to the choices, nothing made yet
            self._ask_setup()
            return
        self.pending_ingest.extend(choice.folders)
        self.sync_after_setup = choice.sync_sessions
        self.show_when_ready = True  # the window the person just set up for
        self.host.create_store(choice.passphrase, use_keychain=choice.use_keychain,
                               recovery_key=key)
        # At once, not when the store is ready seconds later: the window, its page saying
        # the store is being made, with a busy bar.
        self.show_window()

    def _ask_unlock(self) -> None:
        from desktop.dialogs.unlock import UnlockDialog

        if self.dialog is not None:
            self.dialog.raise_()
            return
        self.dialog = UnlockDialog(self.host)
        self.dialog.setWindowIcon(app_icon())
        self.dialog.finished.connect(self._unlock_done)
        self.dialog.open()

    def _unlock_done(self, result: int) -> None:
        self.dialog = None
        if result and not self.quitting:  # the person just unlocked: show what opened
            self.show_window()
            return
        if not result and not self.quitting and not self.host.engine_open:
            say("unlock cancelled")
            self.quit_now()
