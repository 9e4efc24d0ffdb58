"""The ctx desktop app: QApplication, single instance, tray or window, quit order.

Launch shows the tray icon (or, where no tray exists, the main window, as
KeePassXC does) before anything slow; unlocking, opening the store and loading
the model run in the host's pool. A second launch on the same data dir hands
its request (show, ingest, status, quit) to the first through
:mod:`desktop.instance`. Quit: stop the IPC server, let jobs stop at a safe
point (or, asked, let them finish out of sight), close the engine, then leave the
event loop. While it quits, later launches are told so and wait for it to be gone,
then start. State changes are logged as one line each on stderr ("ctx-app: state
ready"): ids and states, no content. Requests of later launches: desktop/control.py.

``python -m desktop.app [--data-dir DIR] [--ingest PATH]... [--status] [--quit]
[--pause] [--resume] [--no-tray]``, also ``ctx app`` and the ``ctx-desktop`` script.
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

from desktop import pickers
from desktop.appearance import Appearance
from desktop.backup_schedule import BackupScheduler
from desktop.config_io import desktop_settings, read_raw
from desktop.control import AppControl
from desktop.gc_timer import GuiGarbageCollector
from desktop.host import EngineHost
from desktop.host_open import EngineFactory
from desktop.icons import app_icon
from desktop.instance import InstanceServer, send, wait_until_gone
from desktop.job_words import quit_question
from desktop.notices import Failure
from desktop.process_clock import process_started
from desktop.qt import QApplication, QMessageBox, QObject, QSystemTrayIcon, QTimer
from desktop.setup_flow import SetupFlow
from desktop.startup import display_problem, prefer_utf8_locale, release_probes
from engine import CtxError


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


class App(QObject, AppControl, SetupFlow):
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
        self.appearance = Appearance(qapp, desktop_appearance(data_dir))
        self.collector = GuiGarbageCollector(self)
        self.host = EngineHost(data_dir, engine_factory, serve, parent=self)
        self.backups = BackupScheduler(self.host, self)
        self.use_tray = QSystemTrayIcon.isSystemTrayAvailable() if tray is None else tray
        self.tray: Any = None
        self.window: Any = None
        self.dialog: Any = None
        self.quit_box: Any = None
        self.pending_ingest: list[str] = [str(Path(p).expanduser().resolve()) for p in ingest]
        self.sync_after_setup = False
        self.show_when_ready = False
        self.welcome = ""  # the window's first banner (what a first-run restore brought)
        self.quitting = False
        self.finishing = False  # quit asked with work running: finishing it, then quitting
        self.started_at = process_started()  # timings_ms count from the process's start
        self.shown_at: float | None = None
        self.ready_at: float | None = None
        self.instance = InstanceServer(data_dir, self.handle_message, self)
        self.host.state_changed.connect(self._state_changed)
        self.host.failed.connect(self._failed)
        self.host.job_progress.connect(self._job_moved)
        self.host.config_changed.connect(self._config_changed)

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
        # shown: when the event loop first runs after show(), its first paint and the
        # request to map it sent to the display (not when show() was called)
        QTimer.singleShot(0, self._shown)
        QTimer.singleShot(0, self.host.start)
        if self.use_tray:
            QTimer.singleShot(0, self._ensure_window)
        return True

    def _shown(self) -> None:
        if self.shown_at is None:
            self.shown_at = time.monotonic()

    def quit(self, *, ask: bool = True) -> None:
        """Quit; with ingestion running (and ``ask``), ask first: finish it in the
        background, or stop now (the job is listed at the next launch, to resume)."""
        if self.quitting or self.quit_box is not None:
            return
        active = self.host.jobs_active
        if ask and active and self.host.engine_open:
            self._ask_quit(active)
            return
        self.quit_now()

    def quit_now(self) -> None:
        """Stop the server, stop jobs at a safe point, close the engine, then exit."""
        if self.quitting:
            return
        self.quitting = True
        self.finishing = False
        say("quitting")
        for box in (self.dialog, self.quit_box):
            if box is not None:
                box.done(0)
        self.host.shutdown()

    def _ask_quit(self, active: list[Any]) -> None:
        box = QMessageBox(QMessageBox.Icon.Question, "Quit ctx", quit_question(active))
        box.setInformativeText("Finish it in the background (ctx quits when it is done), or "
                               "stop now: what is stored stays, and the job is listed with a "
                               "Resume button when ctx starts again.")
        self.finish_button = box.addButton("Finish in the background",
                                           QMessageBox.ButtonRole.AcceptRole)
        self.stop_button = box.addButton("Stop now", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(self.finish_button)
        box.setWindowIcon(app_icon())
        box.finished.connect(lambda _r: self._quit_answered(box))
        self.quit_box = box
        box.open()

    def _quit_answered(self, box: QMessageBox) -> None:
        self.quit_box = None
        clicked = box.clickedButton()
        if self.quitting:
            return
        if clicked is self.stop_button:
            self.quit_now()
        elif clicked is self.finish_button:
            self.finish_then_quit()

    def finish_then_quit(self) -> None:
        """Go out of sight and quit once no job is left (a later launch brings ctx back)."""
        self.finishing = True
        say("finishing jobs, then quitting")
        self.host.resume_ingestion()  # finishing means running (paused here or elsewhere)
        if self.window is not None:
            self.window.hide()
        if self.tray is not None:
            self.tray.hide()
        self._job_moved()

    def _job_moved(self, *_: Any) -> None:
        if self.finishing and not self.host.jobs_active:
            self.quit_now()

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
        if self.finishing:  # brought back while finishing in the background: stay
            self.finishing = False
            say("quit cancelled")
            if self.tray is not None:
                self.tray.show()
        window = self._ensure_window()
        window.show()
        window.raise_()
        window.activateWindow()
        if self.dialog is not None:  # a set-up or unlock dialog stays in front of it
            self.dialog.raise_()
            self.dialog.activateWindow()
        if self.tray is not None:
            self.tray.acknowledge()

    def pick_files(self) -> None:
        paths = pickers.open_files(None, "Ingest files")
        self.ingest(paths)

    def pick_folder(self) -> None:
        folder = pickers.folder(None, "Ingest folder")
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
            if self.show_when_ready or self.host.created:
                self.show_when_ready = False
                self.show_window()  # first run: the window, not only a tray icon
                if self.welcome and self.window is not None:
                    self.window.banner.show_message("ok", self.welcome)
                    self.welcome = ""
            pending, self.pending_ingest = self.pending_ingest, []
            self.ingest(pending)
            if self.sync_after_setup:
                self.sync_after_setup = False
                self.host.sync_sessions()

    def _failed(self, failure: Failure) -> None:
        say(f"failed {failure.operation} [{failure.error.name}]")

    def _config_changed(self) -> None:
        self.appearance.apply(desktop_appearance(self.data_dir))


def desktop_appearance(data_dir: Path) -> str:
    """The appearance config.toml asks for: read from its [desktop] table alone, so that
    a bad setting elsewhere (the store's) keeps the look; "system" when unreadable."""
    try:
        return desktop_settings(read_raw(data_dir).get("desktop")).appearance
    except CtxError:
        return "system"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctx app", description="The ctx tray app.")
    p.add_argument("--data-dir", help="data directory (default: $CTX_HOME or the user data dir)")
    p.add_argument("--ingest", action="append", default=[], metavar="PATH",
                   help="ingest a file or folder (in the running app, if there is one)")
    p.add_argument("--status", action="store_true",
                   help="print the running app's status as JSON (exit 3 if none runs)")
    p.add_argument("--quit", action="store_true", help="ask the running app to quit")
    p.add_argument("--pause", action="store_true", help="pause the running app's ingestion")
    p.add_argument("--resume", action="store_true", help="resume the running app's ingestion")
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
    elif args.pause or args.resume:
        message = {"cmd": "pause" if args.pause else "resume"}
    elif paths:
        message = {"cmd": "ingest", "paths": paths}
    else:
        message = {"cmd": "show"}
    reply = send(data_dir, message)  # before any QApplication: works without a display
    if reply is not None and reply.get("stopping") and not args.status:
        if args.quit or args.pause or args.resume:
            return 0  # it is quitting already
        say("the running app is quitting: starting once it is gone")
        if not wait_until_gone(data_dir):
            print(json.dumps({"ok": False, "error": "the running ctx app did not quit"}),
                  flush=True)
            return 1
        reply = None
    if reply is not None:  # the app runs already: it got our request
        if args.status or paths:
            print(json.dumps(reply), flush=True)
        return 0 if reply.get("ok") else 1
    if args.status or args.quit or args.pause or args.resume:
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
                          lambda *_: QTimer.singleShot(0, lambda: app.quit(ask=False)))
    wake = QTimer()  # lets Python run its signal handlers while Qt waits
    wake.start(200)
    wake.timeout.connect(lambda: None)
    app.start()
    code = qapp.exec()
    say(f"exit {code}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
