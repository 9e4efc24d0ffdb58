"""EngineHost: owns the ContextEngine and the in-process IPC server for the GUI.

Every engine call runs on the host's thread pool (:class:`~desktop.tasks.TaskManager`),
never on the GUI thread. The engine announces changes once and the host turns
them into Qt signals, always emitted on the GUI thread:

- ``state_changed(str)``: starting | needs_setup | locked | opening | ready |
  error | stopping | stopped; ``ready()`` once the engine is open.
- ``job_progress(JobSnapshot)``: the engine's JobChanged, coalesced per job.
- ``sources_changed()``: the engine's SourcesChanged (a job stored sources, a
  delete), whoever caused it.
- ``build_finished(BuildDone)``: every build_context, from this window (``origin``
  "gui") and from IPC callers ("ipc"); sizes and timings, never the query.
- ``alert(dict)``: {code, name, message}, for an engine alert raised (AlertRaised)
  or a failure; ``failed(str, dict)``: an operation that failed and its error
  dict; ``config_changed()``; ``paused_changed(bool)``.

The IPC server is :class:`ipc.serve.ServerHost`, the same code as ``ctx serve``,
with the same connection file, so siblings cannot tell the app from a headless
server. The host hears the engine's one subscription; it polls nothing.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop.messages import job_alert, metric_alert
from desktop.opening import EngineFactory, Opened, close_all, open_and_serve, open_engine
from desktop.qt import QObject, Qt, QTimer, Signal, Slot
from desktop.tasks import Failure, Success, Task, TaskManager, error_dict
from engine import (
    Alert,
    AlertCleared,
    AlertRaised,
    BuildDone,
    Event,
    JobChanged,
    JobSnapshot,
    KeyUnavailable,
    SourcesChanged,
    StoreNotInitialized,
    WrongKey,
    caller,
)

log = logging.getLogger("ctx.desktop.host")

STATES = ("starting", "needs_setup", "locked", "opening", "ready", "error", "stopping",
          "stopped")
JOB_FLUSH_MS = 100  # job snapshots reach the GUI at most this often (the last one always)


class EngineHost(QObject):
    """The GUI's one owner of the engine; see the module docstring for its signals."""

    state_changed = Signal(str)
    ready = Signal()
    job_progress = Signal(object)  # JobSnapshot
    sources_changed = Signal()
    build_finished = Signal(object)  # BuildDone
    alert = Signal(dict)
    failed = Signal(str, dict)
    config_changed = Signal()
    paused_changed = Signal(bool)
    # Engine and server threads hand events over through a queue and wake the GUI thread
    # with an argument-less signal (no Python object crosses threads inside Qt).
    _wake = Signal()

    def __init__(self, data_dir: str | Path, engine_factory: EngineFactory | None = None,
                 serve: bool = True, *, workers: int = 4,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data_dir = Path(data_dir).expanduser().resolve()
        self._factory = engine_factory or open_engine
        self._serve = serve
        self._workers = workers
        self.tasks = TaskManager(max_threads=4, parent=self)
        self.tasks.failed.connect(self._task_failed)
        self._state = "stopped"
        self._engine: Any = None
        self._server: Any = None
        self._config: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._paused = False
        self._pending_jobs: dict[str, JobSnapshot] = {}
        self._pending_lock = threading.Lock()
        self._flush_scheduled = False
        self._last_flush = 0.0
        self._jobs: dict[str, JobSnapshot] = {}
        self._known_alerts: set[str] = set()
        self._shutdown_thread: threading.Thread | None = None
        self._just_opened: tuple[Any, Any] | None = None  # opened, not yet taken by the GUI
        self._events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)
        self._flush_timer = QTimer(self)  # a child: it dies with the host, never fires after
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush_jobs)

    # -- properties ---------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def engine_ready(self) -> bool:
        return self._state == "ready" and self._engine is not None

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
        return dict(self._jobs)

    def server_stats(self) -> dict[str, Any]:
        """The IPC server's counters (requests served...); {"running": False} without one."""
        return self._server.stats() if self._server is not None else {"running": False}

    # -- lifecycle -------------------------------------------------------------------
    def start(self, passphrase: str | None = None) -> None:
        """Open the store in the pool (unlocking from the keychain, the environment or
        ``passphrase``), then serve IPC. Ends in "ready", "needs_setup", "locked" or "error"."""
        if self._state not in ("stopped", "needs_setup", "locked", "error"):
            return
        self._set_state("starting" if passphrase is None else "opening")
        data_dir, factory = self._data_dir, self._factory
        self.tasks.run(lambda: self._open(factory, data_dir, passphrase),
                       self._opened, self._open_failed, name="open")

    def unlock(self, passphrase: str) -> None:
        """Try ``passphrase``; a wrong one emits ``failed("open", wrong_key)``, state "locked"."""
        self.start(passphrase)

    def create_store(self, passphrase: str | None = None, *, use_keychain: bool = True,
                     recovery_key: str | None = None) -> None:
        """First run: create the store (keychain, else ``passphrase``; ``recovery_key``
        unlocks it too), then open it."""
        if self._state not in ("stopped", "needs_setup", "error"):
            return
        self._set_state("opening")
        data_dir, factory = self._data_dir, self._factory

        def work() -> Any:
            from engine import init_store

            init_store(data_dir, passphrase=passphrase,
                       use_keychain=use_keychain and passphrase is None,
                       recovery_key=recovery_key)
            return self._open(factory, data_dir, passphrase)
        self.tasks.run(work, self._opened, self._open_failed, name="create_store")

    def _open(self, factory: EngineFactory, data_dir: Path, passphrase: str | None
              ) -> Opened:
        """Worker: open and serve; remember the result until the GUI thread takes it."""
        opened = open_and_serve(factory, data_dir, passphrase, serve=self._serve,
                                workers=self._workers, on_event=self._on_event)
        with self._pending_lock:
            self._just_opened = (opened.engine, opened.server)
        return opened

    def _opened(self, opened: Opened) -> None:
        engine, server, server_error = opened.engine, opened.server, opened.server_error
        config, status, unsubscribe = opened.config, opened.status, opened.unsubscribe
        with self._pending_lock:
            if self._state in ("stopping", "stopped"):  # quit while opening: shutdown closes it
                return
            self._just_opened = None
        self._engine, self._server, self._config = engine, server, config
        self._unsubscribe = unsubscribe
        self._paused = status.ingestion_paused
        self._set_state("ready")
        self.ready.emit()
        if server_error is not None:
            err = error_dict(server_error)
            self.alert.emit({"code": err["code"], "name": err["name"],
                             "message": "The IPC server could not start: " + err["message"]})
            self.failed.emit("serve", err)
        for active in status.alerts.values():  # raised before we subscribed (at open)
            self._alert_raised(active)

    def _open_failed(self, exc: BaseException) -> None:
        err = error_dict(exc)
        if isinstance(exc, StoreNotInitialized):
            self._set_state("needs_setup")
            return
        if isinstance(exc, (KeyUnavailable, WrongKey)):
            self._set_state("locked")
            self.alert.emit({"code": err["code"], "name": err["name"],
                             "message": err["message"]})
        else:
            self._set_state("error")
            self.alert.emit({"code": err["code"], "name": err["name"],
                             "message": err["message"]})
        self.failed.emit("open", err)

    def shutdown(self, *, wait: bool = False, timeout: float = 60.0) -> None:
        """Stop the server, let jobs stop at a safe point, close the engine (off the GUI thread).

        Ends in "stopped". ``wait`` blocks the caller until then (application quit).
        """
        if self._state in ("stopping", "stopped") and self._shutdown_thread is None:
            self._set_state("stopped")
            return
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
                close_all(engine, server)
                with self._pending_lock:  # opened while we were stopping
                    late, self._just_opened = self._just_opened, None
                if late is not None:
                    close_all(*late)
                self._relay("stopped", None)
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

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.state_changed.emit(state)

    # -- running work ------------------------------------------------------------------
    def run(self, fn: Callable[[Any], Any], success: Success | None = None,
            failure: Failure | None = None, *, name: str | None = None) -> Task | None:
        """Run ``fn(engine)`` on a worker; ``success(result)`` / ``failure(exc)`` here.

        The engine hears the call as this window's (origin "gui"). Without
        ``failure``, a failure emits ``failed(name, error)``. Before the engine
        is ready nothing runs: ``failed`` says so and None is returned.
        """
        op = name or getattr(fn, "__name__", "task")
        engine = self._engine
        if engine is None or self._state != "ready":
            from engine import EngineClosed

            err = EngineClosed(f"the engine is not open ({self._state})")
            if failure is not None:
                failure(err)
            else:
                self.failed.emit(op, error_dict(err))
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

    def sync_sessions(self, success: Success | None = None) -> Task | None:
        """Index what is new in the coding-agent transcript folders."""
        return self.run(lambda e: e.sync(), success, name="sync_sessions")

    def delete_source(self, source_id: str | int, success: Success | None = None
                      ) -> Task | None:
        return self.run(lambda e: e.delete(source_id), success, name="delete_source")

    def build_context(self, query: str, success: Success | None = None,
                      failure: Failure | None = None, **kwargs: Any) -> Task | None:
        """build_context in the pool; the result also reaches ``build_finished`` ("gui")."""
        return self.run(lambda e: e.build_context(query, **kwargs), success, failure,
                        name="build_context")

    def reload_config(self) -> Task | None:
        """Re-read config.toml (after Settings wrote it) and emit ``config_changed``."""
        def load(engine: Any) -> Any:
            from engine import load_config

            return load_config(engine.data_dir)

        def loaded(config: Any) -> None:
            self._config = config
            self.config_changed.emit()
        return self.run(load, loaded, name="reload_config")

    def _set_paused(self, paused: bool) -> None:
        if paused != self._paused:
            self._paused = paused
            self.paused_changed.emit(paused)

    @Slot(str, dict)
    def _task_failed(self, name: str, err: dict[str, Any]) -> None:
        self.failed.emit(name, err)
        if err.get("name") in ("vector_store_unavailable", "store_locked", "wrong_key",
                               "key_unavailable"):
            self.alert.emit({"code": err["code"], "name": err["name"],
                             "message": err["message"]})

    # -- engine events (worker threads) -> signals (GUI thread) --------------------------
    def _on_event(self, event: Event) -> None:
        """The engine's subscription, on the thread of the change: hand it to the GUI."""
        if isinstance(event, JobChanged):
            self._on_job(event.job)
        elif isinstance(event, BuildDone):
            self._relay("build", event)
        elif isinstance(event, SourcesChanged):
            self._relay("sources", event)
        elif isinstance(event, AlertRaised):
            self._relay("alert", event.alert)
        elif isinstance(event, AlertCleared):
            self._relay("alert_cleared", event.name)

    def _on_job(self, snapshot: JobSnapshot) -> None:
        """Engine's writer thread: keep the latest snapshot per job, wake the GUI once."""
        with self._pending_lock:
            self._pending_jobs[snapshot.id] = snapshot
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        self._relay("jobs", None)

    def _relay(self, kind: str, data: Any) -> None:
        """Any thread: queue an event for the GUI thread and wake it."""
        self._events.put((kind, data))
        self._wake.emit()

    @Slot()
    def _drain(self) -> None:
        while True:
            try:
                kind, data = self._events.get_nowait()
            except queue.Empty:
                return
            self._on_relay(kind, data)

    def _on_relay(self, kind: str, data: Any) -> None:
        if kind == "jobs":
            wait_ms = JOB_FLUSH_MS - (time.monotonic() - self._last_flush) * 1000
            if wait_ms > 0:  # at most ~10 redraws a second, however fast the writer goes
                self._flush_timer.start(int(wait_ms) + 1)
            else:
                self._flush_jobs()
        elif kind == "build":
            self.build_finished.emit(data)
        elif kind == "sources":  # after the job snapshots the engine sent before it
            self._flush_timer.stop()
            self._flush_jobs()
            self.sources_changed.emit()
        elif kind == "alert":
            self._alert_raised(data)
        elif kind == "alert_cleared":
            self._known_alerts.discard(data)
        elif kind == "stopped":
            self._finish_stopped()

    def _flush_jobs(self) -> None:
        self._last_flush = time.monotonic()
        with self._pending_lock:
            pending, self._pending_jobs = self._pending_jobs, {}
            self._flush_scheduled = False
        for snap in pending.values():
            self._jobs[snap.id] = snap
            self.job_progress.emit(snap)
            if snap.final:
                self._job_alert(snap)

    def _job_alert(self, snap: JobSnapshot) -> None:
        alert = job_alert(snap)
        if alert is not None:
            self.alert.emit(alert)

    def _alert_raised(self, active: Alert) -> None:
        """An engine alert (vector store down, ingestion failed), told once while it lasts."""
        if active.name in self._known_alerts:
            return
        self._known_alerts.add(active.name)
        self.alert.emit(metric_alert(active))


def _as_gui(fn: Callable[[Any], Any], engine: Any) -> Any:
    """``fn(engine)``, heard by the engine as a call from this window."""
    with caller("gui"):
        return fn(engine)
