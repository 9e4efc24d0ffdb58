"""`ctx serve`: the headless engine, optionally stopping itself when idle.

``--idle-timeout N`` is what a background engine started by a CLI command,
``ctx mcp`` or a hook runs with: it stops after N seconds without a call
(jobs still running count as activity). ``--sync-on-start`` indexes what is
new in the transcript folders once the server is up, in the background.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("ctx.serve")


class ActivityEngine:
    """The engine, with the time of its last call (the idle clock) kept beside it."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.last = time.monotonic()
        self.active = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._engine, name)
        if not callable(attr) or name in ("close", "warm_up"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.active += 1
            try:
                return attr(*args, **kwargs)
            finally:
                with self._lock:
                    self.active -= 1
                    self.last = time.monotonic()
        return call

    def idle_for(self) -> float:
        """Seconds since the last call ended; 0 while a call or a job runs."""
        if self.active:
            return 0.0
        try:
            jobs = self._engine.jobs()
        except Exception:  # noqa: BLE001 - a closed engine is not busy
            jobs = []
        if any(j.get("state") in ("queued", "running") for j in jobs):
            self.last = time.monotonic()
            return 0.0
        return time.monotonic() - self.last


def _watch_idle(engine: ActivityEngine, idle_s: float, stop: Callable[[], None]) -> None:
    def loop() -> None:
        while True:
            time.sleep(min(1.0, idle_s / 4))
            if engine.idle_for() >= idle_s:
                log.warning("idle for %.0f s: stopping", idle_s)
                stop()
                return
    threading.Thread(target=loop, name="ctx-idle-watch", daemon=True).start()


def _sync_in_background(engine: Any) -> None:
    def work() -> None:
        try:
            result = engine.sync()
            log.info("sync on start: %s files, %s chunks", result.get("files"),
                     result.get("chunks"))
        except Exception as exc:  # noqa: BLE001 - a failed sync never stops the server
            log.warning("sync on start failed (%s)", type(exc).__name__)
    threading.Thread(target=work, name="ctx-sync-on-start", daemon=True).start()


def run_serve(args: argparse.Namespace) -> int:
    from ipc.cli.backend import open_engine
    from ipc.serve import serve

    data_dir = Path(args.data_dir) if args.data_dir else None
    idle = args.idle_timeout
    native_idle = "idle_timeout" in inspect.signature(serve).parameters
    holder: dict[str, Any] = {}

    def factory(root: Path | None) -> Any:
        engine = open_engine(root)
        holder["engine"] = engine
        if idle and not native_idle:
            wrapped = ActivityEngine(engine)
            holder["activity"] = wrapped
            return wrapped
        return engine

    def ready(info: Any) -> None:
        stop = "Ctrl-C" if os.name == "nt" else f"Ctrl-C or `kill {os.getpid()}`"
        print(f"ctx: serving {info['data_dir']} at {info['endpoint']} (pid {os.getpid()}); "
              f"stop it with {stop}", flush=True)
        if "activity" in holder:
            _watch_idle(holder["activity"], float(idle),
                        lambda: os.kill(os.getpid(), signal.SIGTERM))
        if args.sync_on_start:
            _sync_in_background(holder["engine"])

    kwargs: dict[str, Any] = {}
    if idle and native_idle:
        kwargs["idle_timeout"] = float(idle)
    return serve(data_dir, endpoint=args.endpoint, workers=args.workers,
                 engine_factory=factory, ready=ready, **kwargs)
