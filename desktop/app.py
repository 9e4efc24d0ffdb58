"""The ctx desktop app: QApplication, single instance, tray or window, quit order.

Launch shows the tray icon (or, where no tray exists, the main window, as
KeePassXC does) before anything slow; unlocking, opening the store and loading
the model run in the host's pool. A second launch on the same data dir hands
its request (show, ingest, status, quit) to the first through
:mod:`desktop.instance`. Quit: stop the IPC server, let jobs stop at a safe
point, close the engine, then leave the event loop. State changes are logged
as one line each on stderr ("ctx-app: state ready"): ids and states, no content.

``python -m desktop.app [--data-dir DIR] [--ingest PATH]... [--status] [--quit]
[--no-tray]``, also ``ctx app`` and the ``ctx-desktop`` script.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from desktop.backup_schedule import BackupScheduler
from desktop.host import EngineHost
from desktop.icons import app_icon
from desktop.instance import InstanceServer, send
from desktop.messages import describe
from desktop.opening import EngineFactory
from desktop.qt import QApplication, QFileDialog, QObject, QSystemTrayIcon, QTimer
from desktop.startup import display_problem, prefer_utf8_locale, release_probes


class GuiGarbageCollector(QObject):
    """Garbage collection on the GUI thread only (as Anki does).

    Python's automatic collector runs in whichever thread happens to allocate:
    an engine or IPC thread could then free Qt objects there and crash the app.
    So automatic collection is off while the app runs, and a timer collects
    here: the young generation every 2 s (cheap), the middle one every 30 s, and
    everything every 5 minutes.
    """

    def __init__(self, parent: QObject, *, young_ms: int = 2000, full_every: int = 150
                 ) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._ticks = 0
        self._full_every = full_every
        self.timer = QTimer(self)
        self.timer.setInterval(young_ms)
        self.timer.timeout.connect(self.collect)
        self.timer.start()

    def collect(self) -> None:
        self._ticks += 1
        if self._ticks % self._full_every == 0:
            gc.collect(2)
        else:
            gc.collect(1 if self._ticks % 15 == 0 else 0)

    def stop(self) -> None:
        self.timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()


def resolve_data_dir(override: str | None) -> Path:
    """The flag, else $CTX_HOME, else the platform user data dir (as the engine resolves it)."""
    if override:
        return Path(override).expanduser().resolve()
    if os.environ.get("CTX_HOME"):
        return Path(os.environ["CTX_HOME"]).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("ctx", appauthor=False)).resolve()


def say(text: str) -> None:
    print(f"ctx-app: {text}", file=sys.stderr, flush=True)


class App(QObject):
    """Owns the host, the tray (or window-only mode), the dialogs and the quit order."""

    def __init__(self, qapp: QApplication, data_dir: Path, *,
                 engine_factory: EngineFactory | None = None, serve: bool = True,
                 tray: bool | None = None, ingest: Sequence[str] = ()) -> None:
        super().__init__()
        self.qapp = qapp
        qapp.setQuitOnLastWindowClosed(False)
        qapp.setApplicationName("ctx")
        qapp.setWindowIcon(app_icon())
        self.data_dir = data_dir
        self.collector = GuiGarbageCollector(self)
        self.host = EngineHost(data_dir, engine_factory, serve, parent=self)
        self.backups = BackupScheduler(self.host, self)
        self.use_tray = QSystemTrayIcon.isSystemTrayAvailable() if tray is None else tray
        self.tray: Any = None
        self.window: Any = None
        self.dialog: Any = None
        self.pending_ingest: list[str] = [str(Path(p).expanduser().resolve()) for p in ingest]
        self.sync_after_setup = False
        self.quitting = False
        self.started_at = time.monotonic()
        self.shown_at: float | None = None
        self.ready_at: float | None = None
        self.instance = InstanceServer(data_dir, self.handle_message, self)
        self.host.state_changed.connect(self._state_changed)
        self.host.failed.connect(self._failed)

    # -- start and quit -------------------------------------------------------------
    def start(self) -> bool:
        """Show the tray icon or the window, then open the store in the background."""
        if not self.instance.listen():
            say("single-instance socket unavailable; a second launch will not find this one")
        if self.use_tray:
            from desktop.tray import Tray

            self.tray = Tray(self.host, self)
            self.tray.open_requested.connect(self.show_window)
            self.tray.ingest_files_requested.connect(self.pick_files)
            self.tray.ingest_folder_requested.connect(self.pick_folder)
            self.tray.quit_requested.connect(self.quit)
            self.tray.show()
            say("tray shown")
        else:
            self.show_window()
            say("window shown")
        self.shown_at = time.monotonic()
        QTimer.singleShot(0, self.host.start)
        if self.use_tray:
            QTimer.singleShot(0, self._ensure_window)
        return True

    def quit(self) -> None:
        """Stop the server, let jobs stop at a safe point, close the engine, then exit."""
        if self.quitting:
            return
        self.quitting = True
        say("quitting")
        if self.dialog is not None:
            self.dialog.done(0)
        self.host.shutdown()

    def _finish_quit(self) -> None:
        self.collector.stop()
        self.instance.close()
        if self.tray is not None:
            self.tray.hide()
        if self.window is not None:
            self.window.quit_on_close = False
            self.window.close()
        self.qapp.quit()

    # -- windows and dialogs -----------------------------------------------------------
    def _ensure_window(self) -> Any:
        if self.window is None:
            from desktop.main_window import MainWindow

            self.window = MainWindow(self.host, quit_on_close=not self.use_tray)
            self.window.quit_requested.connect(self.quit)
            self.window.unlock_requested.connect(self._ask_unlock)
            self.window.setup_requested.connect(self._ask_setup)
        return self.window

    def show_window(self) -> None:
        window = self._ensure_window()
        window.show()
        window.raise_()
        window.activateWindow()
        if self.tray is not None:
            self.tray.acknowledge()

    def pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(None, "Ingest files")
        self.ingest(paths)

    def pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(None, "Ingest folder")
        self.ingest([folder] if folder else [])

    def ingest(self, paths: Sequence[str]) -> None:
        """Ingest as a drop on the window does (the Ingestion panel's path), or queue it."""
        paths = [p for p in paths if p]
        if not paths:
            return
        if not self.host.engine_ready:
            self.pending_ingest.extend(paths)
            return
        self._ensure_window().ingest(list(paths))

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
            self.quit()
            return
        choice = dialog.choice()
        from desktop.dialogs.recovery_key import ask_to_keep_new_key

        # the recovery key is shown (and kept) before the store is made with it
        self.dialog = ask_to_keep_new_key(self.data_dir,
                                          lambda key: self._recovery_kept(choice, key))

    def _restore_closed(self, restored: bool) -> None:
        self.dialog = None
        if not restored and not self.quitting:
            self._ask_setup()

    def _recovery_kept(self, choice: Any, key: str | None) -> None:
        self.dialog = None
        if self.quitting:
            return
        if key is None:  # not kept: back to the choices, nothing made yet
            self._ask_setup()
            return
        self.pending_ingest.extend(choice.folders)
        self.sync_after_setup = choice.sync_sessions
        self.host.create_store(choice.passphrase, use_keychain=choice.use_keychain,
                               recovery_key=key)

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
        if not result and not self.quitting and not self.host.engine_ready:
            say("unlock cancelled")
            self.quit()

    # -- host events -------------------------------------------------------------------
    def _state_changed(self, state: str) -> None:
        say(f"state {state}")
        if state == "stopped" and self.quitting:
            self._finish_quit()
        elif state == "needs_setup":
            self._ask_setup()
        elif state == "locked":
            self._ask_unlock()
        elif state == "error":
            self.show_window()
        elif state == "ready":
            self.ready_at = time.monotonic()
            gc.collect()
            gc.freeze()  # what start-up made stays: later full collections skip it
            say(f"ipc {self.host.ipc_info or 'off'}")
            pending, self.pending_ingest = self.pending_ingest, []
            self.ingest(pending)
            if self.sync_after_setup:
                self.sync_after_setup = False
                self.host.sync_sessions()

    def _failed(self, operation: str, error: dict[str, Any]) -> None:
        say(f"failed {operation} [{error.get('name')}]")
        window_visible = self.window is not None and self.window.isVisible()
        if self.tray is not None and not window_visible and not self.dialog:
            self.tray.attention = True
            self.tray.refresh()
            if QSystemTrayIcon.supportsMessages():
                self.tray.icon.showMessage("ctx", describe(operation, error),
                                           QSystemTrayIcon.MessageIcon.Warning, 10000)

    # -- later launches ------------------------------------------------------------------
    def handle_message(self, message: dict[str, Any]) -> dict[str, Any]:
        cmd = message.get("cmd")
        if cmd == "show":
            self.show_window()
            return {"ok": True}
        if cmd == "ingest":
            paths = message.get("paths")
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return {"ok": False, "error": "ingest takes a list of paths"}
            self.ingest(paths)
            return {"ok": True, "queued": not self.host.engine_ready}
        if cmd == "status":
            return {"ok": True, **self.status()}
        if cmd == "quit":
            QTimer.singleShot(0, self.quit)
            return {"ok": True}
        return {"ok": False, "error": "unknown command"}

    def status(self) -> dict[str, Any]:
        tray = self.tray
        jobs = self.host.jobs.values()
        return {
            "pid": os.getpid(), "state": self.host.state, "data_dir": str(self.data_dir),
            "ipc": self.host.ipc_info,
            "tray": {"available": QSystemTrayIcon.isSystemTrayAvailable(),
                     "used": tray is not None,
                     "visible": bool(tray is not None and tray.icon.isVisible()),
                     "look": tray.look if tray is not None else None,
                     "percent": tray.percent if tray is not None else None},
            "window": {"visible": bool(self.window is not None and self.window.isVisible()),
                       "title": self.window.windowTitle() if self.window is not None else None},
            "jobs": {"total": len(self.host.jobs),
                     "active": sum(not j.final for j in jobs),
                     "pending": len(self.pending_ingest) + len(self.host.tasks.running()),
                     "done": sum(j.state == "done" for j in jobs),
                     "chunks": sum(j.chunks for j in jobs)},
            "server": {k: v for k, v in self.host.server_stats().items()
                       if k in ("running", "requests_served", "received")},
            "timings_ms": {k: round((v - self.started_at) * 1000, 1) for k, v in
                           (("shown", self.shown_at), ("ready", self.ready_at)) if v},
        }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctx app", description="The ctx tray app.")
    p.add_argument("--data-dir", help="data directory (default: $CTX_HOME or the user data dir)")
    p.add_argument("--ingest", action="append", default=[], metavar="PATH",
                   help="ingest a file or folder (in the running app, if there is one)")
    p.add_argument("--status", action="store_true",
                   help="print the running app's status as JSON (exit 3 if none runs)")
    p.add_argument("--quit", action="store_true", help="ask the running app to quit")
    p.add_argument("--no-tray", action="store_true", help="use the window, not the tray")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    data_dir = resolve_data_dir(args.data_dir)
    paths = [str(Path(p).expanduser().resolve()) for p in args.ingest]
    if args.status:
        message: dict[str, Any] = {"cmd": "status"}
    elif args.quit:
        message = {"cmd": "quit"}
    elif paths:
        message = {"cmd": "ingest", "paths": paths}
    else:
        message = {"cmd": "show"}
    reply = send(data_dir, message)  # before any QApplication: works without a display
    if reply is not None:  # the app runs already: it got our request
        if args.status or paths:
            print(json.dumps(reply), flush=True)
        return 0 if reply.get("ok") else 1
    if args.status or args.quit:
        print(json.dumps({"ok": False, "error": "no ctx app is running for this data dir"}),
              flush=True)
        return 3
    if QApplication.instance() is None:  # before Qt loads a platform plugin (it aborts there)
        problem = display_problem()
        if problem:
            say(f"{problem}: the tray app needs a desktop session. "
                "Use `ctx serve` to run the engine without one.")
            return 1
        prefer_utf8_locale()  # what Qt would do, without its warning
    qapp = QApplication.instance() or QApplication([sys.argv[0]])
    release_probes()  # Qt is connected now: the probe may leave without a server reset
    assert isinstance(qapp, QApplication)
    app = App(qapp, data_dir, tray=False if args.no_tray else None, ingest=paths)
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name),
                          lambda *_: QTimer.singleShot(0, app.quit))
    wake = QTimer()  # lets Python run its signal handlers while Qt waits
    wake.start(200)
    wake.timeout.connect(lambda: None)
    app.start()
    code = qapp.exec()
    say(f"exit {code}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
