"""EngineHost: owns the ContextEngine, the in-process IPC server and the watched folders.

Every engine call runs on the host's thread pool (:class:`~desktop.tasks.TaskManager`),
never on the GUI thread. The engine announces its changes through one
subscription; the host hears them on the engine's threads, hands them to the
GUI thread through its one :class:`~desktop.bridge.GuiBridge`, and emits typed
signals there (nobody polls the engine):

- ``state_changed(str)``: starting | needs_setup | locked | opening | loading |
  ready | error | stopping | stopped. "loading": the store is open (IPC serves,
  engine calls work) and the embedding model is still loading; "ready" once it
  is loaded (``ready()`` then), so ready means ready.
- ``job_progress(JobSnapshot)``: the engine's JobChanged, coalesced per job.
- ``sources_changed()``, ``build_finished(BuildDone)`` (from this window,
  origin "gui", and from IPC callers), ``warming(Warming)``.
- ``alert(Notice)``: a job that failed or skipped files (once per job), an engine
  alert raised (once while it lasts); ``alert_cleared(str)``: the engine cleared
  that alert. ``failed(Failure)``: an operation that failed.
- ``watch_changed(WatchReport)``: the watched folders and what they did.
- ``config_changed()``, ``paused_changed(bool)``.

The IPC server is :class:`ipc.serve.ServerHost` and the watched folders the engine's
own (``engine.watch()``, ``WatchChanged`` events), the same code as ``ctx serve``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop.bridge import GuiBridge
from desktop.host_events import EngineEvents, EventSignals
from desktop.host_open import (
    EngineFactory,
    Opened,
    close_all,
    open_and_serve,
    open_engine,
    store_exists,
)
from desktop.notices import Failure, Notice, error_info
from desktop.qt import QObject, Signal
from desktop.tasks import FailureCallback, Success, Task, TaskManager
from engine import (
    Alert,
    ErrorInfo,
    JobSnapshot,
    KeyUnavailable,
    StoreNotInitialized,
    WatchReport,
    WrongKey,
    caller,
)

log = logging.getLogger("ctx.desktop.host")

STATES = ("starting", "needs_setup", "locked", "opening", "loading", "ready", "error",
          "stopping", "stopped")
OPEN_STATES = ("loading", "ready")


class EngineHost(QObject):
    """The GUI's one owner of the engine; see the module docstring for its signals. What
    it hears of the engine is its member ``events`` (:class:`EngineEvents`)."""

    state_changed = Signal(str)
    ready = Signal()
    job_progress = Signal(object)  # JobSnapshot
    sources_changed = Signal()
    build_finished = Signal(object)  # BuildDone
    warming = Signal(object)  # Warming
    alert = Signal(object)  # Notice
    alert_cleared = Signal(str)  # an engine alert's name
    failed = Signal(object)  # Failure
    watch_changed = Signal(object)  # WatchReport
    config_changed = Signal()
    paused_changed = Signal(bool)
    synced = Signal(object)  # SyncResult: a sync this window asked for

    def __init__(self, data_dir: str | Path, engine_factory: EngineFactory | None = None,
                 serve: bool = True, *, workers: int = 4,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data_dir = Path(data_dir).expanduser().resolve()
        self._factory = engine_factory or open_engine
        self._serve = serve
        self._workers = workers
        self.bridge = GuiBridge(self)
        self.tasks = TaskManager(max_threads=4, parent=self, bridge=self.bridge)
        self.tasks.failed.connect(self._task_failed)
        self._state = "stopped"
        self._engine: Any = None
        self._server: Any = None
        self._config: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._paused = False
        self.created = False  # this run made the store (first run)
        self.open_error: ErrorInfo | None = None  # why the store did not open (state error)
        signals = EventSignals(
            build_finished=self.build_finished, sources_changed=self.sources_changed,
            job_progress=self.job_progress, watch_changed=self.watch_changed,
            warming=self.warming, alert=self.alert, alert_cleared=self.alert_cleared)
        self.events = EngineEvents(signals, self.bridge, timer_parent=self,
                                   on_model_loaded=self._model_loaded_now)
        self._pending_lock = threading.Lock()  # guards _just_opened and the state at open
        self._shutdown_thread: threading.Thread | None = None
        self._just_opened: Opened | None = None  # opened, not yet taken by the GUI
        # The passphrase typed for the open now running, and, once it proved right but the
        # store still did not open (a setting at fault), kept for "Try again" or a reset
        # on the error page, so the fix does not ask for it again; forgotten once open.
        self._typed: str | None = None
        self._retry_secret: str | None = None

    # -- properties ---------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def engine_open(self) -> bool:
        """The store is open and engine calls run (the model may still be loading)."""
        return self._state in OPEN_STATES and self._engine is not None

    @property
    def engine_ready(self) -> bool:
        """Open with the model loaded: searches and ingestion run at full speed."""
        return self._state == "ready" and self._engine is not None

    @property
    def model_loaded(self) -> bool:
        return self.events.model_loaded

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def config(self) -> Any:
        """The engine's typed Config as last loaded (None before the engine opens)."""
        return self._config

    @property
    def ipc_info(self) -> str | None:
        """The IPC endpoint clients connect to (None when not serving)."""
        info = self._server.info if self._server is not None else None
        return info["endpoint"] if info else None

    @property
    def ingestion_paused(self) -> bool:
        return self._paused

    @property
    def jobs(self) -> dict[str, JobSnapshot]:
        """The latest snapshot of every job seen since start, by id."""
        return dict(self.events.jobs)

    @property
    def jobs_active(self) -> list[JobSnapshot]:
        """Jobs queued or running."""
        return [j for j in self.events.jobs.values() if not j.final]

    @property
    def active_alerts(self) -> dict[str, Alert]:
        """Engine alerts raised and not cleared, by name."""
        return dict(self.events.active_alerts)

    @property
    def watch_report(self) -> WatchReport:
        """The watched folders followed, and those that cannot be (and why)."""
        return self.events.watch_report

    @property
    def watch_jobs(self) -> set[str]:
        """The ingest jobs the watched folders queued."""
        return set(self.events.watch_jobs)

    def server_stats(self) -> dict[str, Any]:
        """The IPC server's counters (requests served...); {"running": False} without one."""
        return self._server.stats() if self._server is not None else {"running": False}

    # -- lifecycle -------------------------------------------------------------------
    def start(self, passphrase: str | None = None) -> None:
        """Open the store in the pool (unlocking from the keychain, the environment or
        ``passphrase``), then serve IPC. Ends in "ready" (through "loading"),
        "needs_setup", "locked" or "error"."""
        if self._state not in ("stopped", "needs_setup", "locked", "error"):
            return
        if passphrase is None and self._state == "error":
            passphrase = self._retry_secret
        self._retry_secret = None
        self._typed = passphrase
        self.open_error = None
        self._set_state("starting" if passphrase is None else "opening")
        data_dir = self._data_dir

        def work() -> Opened:
            return self._open(data_dir, passphrase, store_exists(data_dir))
        self.tasks.run(work, self._opened, self._open_failed, name="open")

    def unlock(self, passphrase: str) -> None:
        """Try ``passphrase``; a wrong one emits ``failed`` (wrong_key), state "locked"."""
        self.start(passphrase)

    def create_store(self, passphrase: str | None = None, *, use_keychain: bool = True,
                     recovery_key: str | None = None) -> None:
        """First run: create the store (keychain, else ``passphrase``; ``recovery_key``
        unlocks it too), then open it."""
        if self._state not in ("stopped", "needs_setup", "error"):
            return
        self._set_state("opening")
        data_dir = self._data_dir

        def work() -> Opened:
            from engine import init_store

            init_store(data_dir, passphrase=passphrase,
                       use_keychain=use_keychain and passphrase is None,
                       recovery_key=recovery_key)
            return self._open(data_dir, passphrase, False)
        self.tasks.run(work, self._opened, self._open_failed, name="create_store")

    def _open(self, data_dir: Path, passphrase: str | None, existed: bool) -> Opened:
        """Worker: open and serve; remember the result until the GUI thread takes it."""
        opened = open_and_serve(self._factory, data_dir, passphrase, serve=self._serve,
                                workers=self._workers, on_event=self.events.on_event,
                                existed=existed)
        with self._pending_lock:
            self._just_opened = opened
        return opened

    def _opened(self, opened: Opened) -> None:
        with self._pending_lock:
            if self._state in ("stopping", "stopped"):  # quit while opening: shutdown closes it
                return
            self._just_opened = None
        self._typed = self._retry_secret = None
        self._engine, self._server, self._config = opened.engine, opened.server, opened.config
        self._unsubscribe = opened.unsubscribe
        self.created = self.created or opened.created
        self._paused = opened.status.ingestion_paused
        if opened.server_error is not None:
            err = error_info(opened.server_error)
            self.failed.emit(Failure("serve", err))
            self.alert.emit(Notice(err.name, "The IPC server could not start: " + err.message,
                                   err.code))
        self.events.opened(opened.status)
        self._set_state("ready" if self.model_loaded else "loading")
        if self.model_loaded:
            self.ready.emit()

    def _open_failed(self, exc: BaseException) -> None:
        err = error_info(exc)
        if isinstance(exc, StoreNotInitialized):
            self._set_state("needs_setup")
            return
        if isinstance(exc, (KeyUnavailable, WrongKey)):
            # A locked store is a state, not a failure; only a wrong passphrase is told.
            self._typed = None
            self._set_state("locked")
            if isinstance(exc, WrongKey):
                self.failed.emit(Failure("open", err))
            return
        self.open_error = err
        self._retry_secret, self._typed = self._typed, None  # it unlocked: keep for a retry
        self._set_state("error")
        self.failed.emit(Failure("open", err))

    def shutdown(self, *, wait: bool = False, timeout: float = 60.0, stop_jobs: bool = True
                 ) -> None:
        """Stop watching and serving, stop jobs at a safe point (they are listed at the next
        launch), close the engine (off the GUI thread). Ends in "stopped". ``wait`` blocks
        the caller until then."""
        if self._state in ("stopping", "stopped") and self._shutdown_thread is None:
            self._set_state("stopped")
            return
        self._typed = self._retry_secret = None
        if self._shutdown_thread is None:
            self._set_state("stopping")
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            engine, server = self._engine, self._server
            self._engine = None
            tasks = self.tasks

            def work() -> None:
                if unsubscribe is not None:
                    unsubscribe()
                tasks.wait_for_done(int(timeout * 1000))
                close_all(engine, server, stop_jobs=stop_jobs)
                with self._pending_lock:  # opened while we were stopping
                    late, self._just_opened = self._just_opened, None
                if late is not None:
                    late.unsubscribe()
                    close_all(late.engine, late.server)
                self.bridge.post(self._finish_stopped)
            self._shutdown_thread = threading.Thread(target=work, name="ctx-shutdown",
                                                     daemon=True)
            self._shutdown_thread.start()
        if wait and self._shutdown_thread is not None:
            self._shutdown_thread.join(timeout)
            self._finish_stopped()

    def _finish_stopped(self) -> None:
        if self._state != "stopped":
            self._shutdown_thread = None
            self._set_state("stopped")

    def _model_loaded_now(self) -> None:
        """The model finished loading (``events``): an open store is ready now."""
        if self._state == "loading":
            self._set_state("ready")
            self.ready.emit()

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.state_changed.emit(state)

    # -- running work ------------------------------------------------------------------
    def run(self, fn: Callable[[Any], Any], success: Success | None = None,
            failure: FailureCallback | None = None, *, name: str | None = None
            ) -> Task | None:
        """Run ``fn(engine)`` on a worker; ``success(result)`` / ``failure(exc)`` here.

        The engine hears the call as this window's (origin "gui"). Without
        ``failure``, a failure emits ``failed``. Before the store is open nothing
        runs: ``failed`` (or ``failure``) says so and None is returned.
        """
        op: str = name or str(getattr(fn, "__name__", "task"))
        engine = self._engine
        if engine is None or self._state not in OPEN_STATES:
            from engine import EngineClosed

            err = EngineClosed(f"the engine is not open ({self._state})")
            if failure is not None:
                failure(err)
            else:
                self.failed.emit(Failure(op, error_info(err)))
            return None
        return self.tasks.run(lambda: _as_gui(fn, engine), success, failure, name=op)

    def ingest_paths(self, paths: list[str], success: Success | None = None) -> Task | None:
        """Queue an ingestion of files and folders; progress arrives on ``job_progress``."""
        chosen = [str(p) for p in paths]
        return self.run(lambda e: e.ingest(paths=chosen), success, name="ingest")

    def pause_ingestion(self) -> Task | None:
        return self.run(lambda e: e.pause_ingestion(), lambda _: self._set_paused(True),
                        name="pause_ingestion")

    def resume_ingestion(self) -> Task | None:
        return self.run(lambda e: e.resume_ingestion(), lambda _: self._set_paused(False),
                        name="resume_ingestion")

    def cancel_job(self, job_id: str) -> Task | None:
        """Cancel a job: a queued one is dropped, a running one stops at a safe point."""
        return self.run(lambda e: e.cancel_job(job_id), name="cancel_job")

    def resume_interrupted(self, job_id: str, success: Success | None = None) -> Task | None:
        """Ingest again what a job interrupted by an earlier quit or crash was asked to."""
        return self.run(lambda e: e.resume_interrupted(job_id), success,
                        name="resume_interrupted")

    def dismiss_interrupted(self, job_id: str, success: Success | None = None) -> Task | None:
        return self.run(lambda e: e.dismiss_interrupted(job_id), success,
                        name="dismiss_interrupted")

    def sync_sessions(self, success: Success | None = None) -> Task | None:
        """Index what is new in the coding-agent transcript folders."""
        def done(result: Any) -> None:
            self.synced.emit(result)
            if success is not None:
                success(result)
        return self.run(lambda e: e.sync(), done, name="sync_sessions")

    def delete_source(self, source_id: str | int, success: Success | None = None
                      ) -> Task | None:
        return self.run(lambda e: e.delete(source_id), success, name="delete_source")

    def build_context(self, query: str, success: Success | None = None,
                      failure: FailureCallback | None = None, **kwargs: Any) -> Task | None:
        """build_context in the pool; the result also reaches ``build_finished`` ("gui")."""
        return self.run(lambda e: e.build_context(query, **kwargs), success, failure,
                        name="build_context")

    def reload_config(self) -> Task | None:
        """Re-read config.toml (after Settings wrote it): the watched folders follow it at
        once; other engine settings apply at the next open. Emits ``config_changed``."""
        def load(engine: Any) -> Any:
            from engine import load_config

            config = load_config(engine.data_dir)
            engine.watch(config.ingest.watched_folders)
            return config

        def loaded(config: Any) -> None:
            self._config = config
            self.config_changed.emit()
        return self.run(load, loaded, name="reload_config")

    def _set_paused(self, paused: bool) -> None:
        if paused != self._paused:
            self._paused = paused
            self.paused_changed.emit(paused)

    def _task_failed(self, failure: Failure) -> None:
        self.failed.emit(failure)


def _as_gui(fn: Callable[[Any], Any], engine: Any) -> Any:
    """``fn(engine)``, heard by the engine as a call from this window."""
    with caller("gui"):
        return fn(engine)
