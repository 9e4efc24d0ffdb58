"""The MCP server's line to the engine: the running one, or one started in the background.

The MCP process never opens the store itself: it talks to the engine that
owns the data dir (the desktop app or ``ctx serve``), and when none runs it
starts one (``ctx serve --idle-timeout``) the way CLI commands do. A server
that restarted (new key, new endpoint) is found again on the next call.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ipc.errors import IpcTimeout, ServerUnavailable

T = TypeVar("T")


def _notice(message: str) -> None:
    sys.stderr.write(message + "\n")  # stdout is the protocol's; stderr is the client's log
    sys.stderr.flush()


class EngineLink:
    """A RemoteEngine that is (re)connected on demand; thread-safe."""

    def __init__(self, data_dir: str | None, *, timeout: float = 30.0,
                 start_wait_s: float = 180.0) -> None:
        self.data_dir = data_dir
        self.timeout = timeout
        self.start_wait_s = start_wait_s
        self._engine: Any = None
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        from engine import probe_store
        from ipc.autostart import ensure_server
        from ipc.discovery import find_live
        from ipc.remote import RemoteEngine

        info = find_live(self.data_dir)
        if info is None:
            probe = probe_store(self.data_dir, unlock=True)
            if probe.key == "none" and probe.problem is not None:
                raise probe.problem
            info = ensure_server(probe.data_dir, wait_s=self.start_wait_s, notice=_notice)
        root = info["data_dir"]
        return RemoteEngine(info, timeout=self.timeout,
                            rediscover=lambda: find_live(Path(root)))

    def engine(self) -> Any:
        with self._lock:
            if self._engine is None:
                self._engine = self._connect()
            return self._engine

    def call(self, fn: Callable[[Any], T]) -> T:
        """``fn(engine)``; once more on a fresh connection if the engine went away."""
        try:
            return fn(self.engine())
        except (IpcTimeout, ServerUnavailable):
            self.reset()
            return fn(self.engine())

    def reset(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.close()
            self._engine = None

    def close(self) -> None:
        self.reset()
