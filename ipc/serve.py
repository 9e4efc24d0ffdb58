"""Run a ctx server for one data dir: headless (``serve``) or inside another process.

:class:`ServerHost` is the one piece both the headless server and the desktop
app use: it binds a :class:`~ipc.server.Server` for an already open engine,
writes the connection file (so the CLI, hooks and siblings find it), serves on
a background thread and, on :meth:`ServerHost.stop`, stops serving and removes
the file. It never closes the engine: its owner does.

``serve()`` owns the whole life of a headless server: it opens the engine
(which takes the data dir lock, so a second server on the same data dir fails
with ``store_locked`` before touching anything), serves through a ServerHost
until SIGTERM/SIGINT, a ``shutdown`` request or ``idle_timeout`` seconds
without a request (the one idle clock: requests and jobs count as activity),
and then closes the engine. ``ctx serve`` and ``python -m ipc.serve`` only
parse their arguments and call it; the latter prints one JSON line (without
the key) once it is ready.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from engine import UPGRADE_LOGGER, CtxError, EngineAPI, Event, WatchChanged, parse_config_section
from ipc.connection import (
    ConnectionInfo,
    connection_file_path,
    default_endpoint,
    make_info,
    remove_connection_file,
    write_connection_file,
)
from ipc.exit_codes import exit_code
from ipc.server import Server
from ipc.wire import IpcConfig

__all__ = ["ServerHost", "main", "serve"]

EngineFactory = Callable[[Path | None], Any]

log = logging.getLogger("ctx.serve")


def _open_context_engine(data_dir: Path | None) -> Any:
    from engine import ContextEngine

    return ContextEngine.open(data_dir)


@contextlib.contextmanager
def _stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Route SIGTERM/SIGINT (and SIGHUP) to ``stop`` while serving; only on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = ("SIGTERM", "SIGINT", "SIGHUP")
    sigs = [getattr(signal, n) for n in names if hasattr(signal, n)]
    previous = {sig: signal.signal(sig, lambda _signum, _frame: stop()) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ipc_config(engine: Any) -> IpcConfig:
    """The [ipc] table of the engine's config (config.toml, CTX__IPC__*), validated."""
    table = getattr(getattr(engine, "config", None), "ipc", None) or {}
    return parse_config_section(IpcConfig, table, "ipc")


class ServerHost:
    """The IPC server of one open engine, as the headless server and the desktop app run it.

    ``start()`` binds (a busy endpoint fails here), writes the owner-only
    connection file with a fresh key and serves on a background thread.
    ``stop()`` ends serving (in-flight requests may finish), removes the
    connection file and leaves the engine open. Safe to stop twice.
    """

    def __init__(self, engine: Any, *, endpoint: str | None = None, workers: int = 4,
                 config: IpcConfig | None = None) -> None:
        self.engine = engine
        self._endpoint = endpoint
        self._workers = workers
        self._config = config
        self._server: Server | None = None
        self._conn_path: Path | None = None
        self._info: ConnectionInfo | None = None
        self._started_at: float | None = None
        self._stopped = False
        self._lock = threading.Lock()
        self._last_received = 0
        self._last_activity = time.monotonic()

    @property
    def info(self) -> ConnectionInfo | None:
        """The connection info (endpoint, key, pid...) once started; None before."""
        return self._info

    @property
    def running(self) -> bool:
        return self._server is not None and not self._stopped and not self._server.wait(0)

    def start(self) -> ConnectionInfo:
        """Bind, write the connection file and serve on a background thread."""
        with self._lock:
            if self._server is not None:
                raise RuntimeError("ServerHost.start() may be called once")
            root = Path(self.engine.data_dir)
            key = secrets.token_hex(32)
            config = self._config or ipc_config(self.engine)
            server = Server(self.engine, self._endpoint or config.endpoint
                            or default_endpoint(root), key, workers=self._workers,
                            config=config)
            try:
                info = make_info(server.endpoint, key, root)
                self._conn_path = write_connection_file(info, connection_file_path(root))
            except BaseException:
                server.close()
                raise
            self._server, self._info = server, info
            self._started_at = time.monotonic()
            self._last_activity = self._started_at
            server.start()
            return info

    def stats(self) -> dict[str, Any]:
        """The server's counters (received, replied, method:<name>...), plus endpoint and uptime."""
        if self._server is None:
            return {"running": False}
        out: dict[str, Any] = dict(self._server.stats())
        out["requests_served"] = out.get("replied", 0)
        out["endpoint"] = self._server.endpoint
        out["running"] = self.running
        out["uptime_s"] = round(time.monotonic() - (self._started_at or time.monotonic()), 3)
        return out

    def idle_seconds(self) -> float:
        """Seconds since the last request arrived or finished (or since start)."""
        if self._server is None:
            return 0.0
        stats = self._server.stats()
        now = time.monotonic()
        received = stats.get("received", 0)
        if received != self._last_received or stats.get("in_flight", 0) > 0:
            self._last_received = received
            self._last_activity = now
        return now - self._last_activity

    def request_stop(self) -> None:
        """Ask the server to stop (signal-handler safe); :meth:`stop` finishes the job."""
        if self._server is not None:
            self._server.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until serving has ended (a ``shutdown`` request, :meth:`request_stop`)."""
        return True if self._server is None else self._server.wait(timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop serving, wait up to ``timeout`` for the loop, remove the connection file."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            server, conn_path = self._server, self._conn_path
        try:
            if server is not None:
                server.close(timeout=timeout)
        finally:
            if conn_path is not None:
                remove_connection_file(conn_path, pid=os.getpid())


def _jobs_active(engine: EngineAPI) -> bool:
    try:
        return any(not j.final for j in engine.jobs())
    except Exception:  # noqa: BLE001 - a failing engine call only means "don't know"
        return False


def _sync_in_background(engine: EngineAPI) -> None:
    """Index what is new in the transcript folders, off the serving thread."""
    def work() -> None:
        try:
            result = engine.sync()
            log.info("sync on start: %s files, %s chunks", result.files, result.chunks)
        except Exception as exc:  # noqa: BLE001 - a failed sync never stops the server
            log.warning("sync on start failed (%s)", type(exc).__name__)
    threading.Thread(target=work, name="ctx-sync-on-start", daemon=True).start()


def serve(data_dir: Path | None = None, *, endpoint: str | None = None, workers: int = 4,
          ready: Callable[[ConnectionInfo], None] | None = None,
          config: IpcConfig | None = None, engine_factory: EngineFactory | None = None,
          idle_timeout: float | None = None, sync_on_start: bool = False) -> int:
    """Serve the engine of ``data_dir`` (None: $CTX_HOME or the platform default) until stopped.

    ``ready`` is called with the connection info once clients can connect.
    ``engine_factory`` replaces ``ContextEngine.open`` (tests, embedding).
    ``idle_timeout``: stop after that many seconds without a request (and no
    ingestion job queued or running); None serves until told to stop.
    ``sync_on_start``: once serving, index what is new in the transcript folders.
    Returns 0 after a clean stop; engine errors (StoreLocked, WrongKey...) propagate.
    """
    if idle_timeout is not None and idle_timeout <= 0:
        raise ValueError("idle_timeout must be positive")
    if endpoint is not None:
        from ipc.endpoints import check_loopback

        check_loopback(endpoint)  # refused before the store is opened (or created)
    engine = (engine_factory or _open_context_engine)(data_dir)
    host: ServerHost | None = None
    subscribe = getattr(engine, "subscribe", None)
    unsubscribe = subscribe(_log_watch) if subscribe is not None else None
    try:
        warm_up = getattr(engine, "warm_up", None)
        if warm_up is not None:
            warm_up()  # load the model in the background while clients connect
        host = ServerHost(engine, endpoint=endpoint, workers=workers, config=config)
        # A signal only raises this flag, which the loop below acts on: its handler runs
        # between two bytecodes of the main thread, maybe while that thread holds a lock,
        # and a second signal may land inside the first's handler (Ctrl-C, then the
        # script's TERM: an Event.set there waited for its own lock, for ever).
        asked = [False]

        def stop() -> None:
            asked[0] = True

        with _stop_on_signals(stop):
            info = host.start()  # a signal may come as soon as the connection file is out
            if asked[0]:  # stopped before it served: it ends at once, cleanly
                host.request_stop()
            else:
                if ready is not None:
                    ready(info)
                if sync_on_start:
                    _sync_in_background(engine)
                watch = getattr(engine, "watch", None)
                if watch is not None:
                    watch()  # the config's [ingest] watched_folders, if any
            poll = 0.2 if idle_timeout is None else min(0.2, idle_timeout / 4)
            while not host.wait(poll):
                if asked[0]:
                    host.request_stop()
                    continue
                if idle_timeout is not None and host.idle_seconds() >= idle_timeout:
                    if _jobs_active(engine):
                        continue
                    host.request_stop()
    finally:
        if getattr(engine, "watch", None) is not None:
            engine.watch([])  # no change is ingested while the server stops
        if unsubscribe is not None:
            unsubscribe()
        _stop_jobs(engine)  # first: a request in flight that waits on a job ends with it
        if host is not None:
            host.stop(timeout=30)
        engine.close()
    return 0


def _stop_jobs(engine: Any) -> None:
    """As the app does when it quits: running jobs stop at their next safe point (what
    they stored stays; a vector stage left waiting resumes at the next start, and the
    engine lists the stopped jobs then) instead of holding a Ctrl-C for minutes."""
    cancel_all = getattr(engine, "cancel_all", None)
    if cancel_all is None:
        return
    try:
        stopped = cancel_all()
    except Exception:  # closing the engine matters more
        log.exception("cancelling jobs at stop failed")
        return
    if stopped:
        log.info("stopping: %d jobs stop at their next safe point", len(stopped))


def _log_watch(event: Event) -> None:
    """What the watched folders did, in the log: counts and reasons, never a path."""
    if not isinstance(event, WatchChanged):
        return
    report = event.report
    if report.error is not None:
        log.warning("watched folders: %s", report.error.name)
    elif report.removed:
        log.info("watched folders: %d deleted files removed", report.removed)
    elif report.job is None and report.problems:
        log.warning("watched folders: %d of %d cannot be watched (%s)", len(report.problems),
                    len(report.problems) + len(report.folders),
                    ", ".join(sorted(set(report.problems.values()))))


def main(argv: Sequence[str] | None = None, *,
         engine_factory: EngineFactory | None = None) -> int:
    """``python -m ipc.serve [--data-dir DIR] [--endpoint URL] [--workers N]``.

    Exits 0 after a clean stop, or with the error's exit code (store_locked: 4)
    after printing ``{"error": {code, name, message, details}}`` on stderr.
    """
    parser = argparse.ArgumentParser(prog="python -m ipc.serve", description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--endpoint", default=None)
    parser.add_argument("--workers", type=int, default=IpcConfig.workers)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger(UPGRADE_LOGGER).setLevel(logging.INFO)  # a long first open says why

    def announce(info: ConnectionInfo) -> None:
        public = {k: v for k, v in info.items() if k != "key"}
        print(json.dumps({"ready": True, **public}), flush=True)

    try:
        return serve(args.data_dir, endpoint=args.endpoint, workers=args.workers,
                     ready=announce, engine_factory=engine_factory)
    except CtxError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr, flush=True)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())
