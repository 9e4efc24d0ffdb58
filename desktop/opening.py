"""Opening and closing the engine for the desktop host (worker threads only).

``open_and_serve`` opens the store, starts loading the model in the background,
binds the in-process IPC server (the same ServerHost as ``ctx serve``) and
subscribes to the engine's events (jobs, sources, builds, alerts); ``close_all`` undoes it in the quit order: stop the
server, cancel jobs (they stop at a safe point), close the engine. Neither
touches Qt.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import Event, Status

log = logging.getLogger("ctx.desktop.opening")

# factory(data_dir, passphrase) -> an open engine; passphrase None: keychain or environment.
EngineFactory = Callable[[Path, "str | None"], Any]


def headless_key_given() -> bool:
    """True when the environment carries the key (CTX_PASSPHRASE or CTX_KEY_FILE)."""
    return bool(os.environ.get("CTX_PASSPHRASE") or os.environ.get("CTX_KEY_FILE"))


def open_engine(data_dir: Path, passphrase: str | None) -> Any:
    """Open an existing store; create one only where the environment holds the key."""
    from engine import ContextEngine

    return ContextEngine.open(data_dir, passphrase=passphrase,
                              create=passphrase is None and headless_key_given())


@dataclass
class Opened:
    """What a successful open hands the GUI thread."""

    engine: Any
    server: Any  # ServerHost, or None without IPC
    server_error: BaseException | None
    config: Any
    status: Status
    unsubscribe: Callable[[], None]


def open_and_serve(factory: EngineFactory, data_dir: Path, passphrase: str | None, *,
                   serve: bool, workers: int, on_event: Callable[[Event], None]) -> Opened:
    """Worker: open the engine, warm the model up, bind the server, hear its events."""
    engine = factory(data_dir, passphrase)
    try:
        warm_up = getattr(engine, "warm_up", None)
        if warm_up is not None:
            warm_up()
        server, server_error = None, None
        if serve:
            from ipc.serve import ServerHost

            server = ServerHost(engine, workers=workers)
            try:
                server.start()
            except Exception as exc:  # noqa: BLE001 - the app works without IPC
                server, server_error = None, exc
        unsubscribe = engine.subscribe(on_event)
        status = engine.status()  # after subscribing: no alert falls between the two
        return Opened(engine, server, server_error, engine.config, status, unsubscribe)
    except BaseException:
        engine.close()
        raise


def close_all(engine: Any, server: Any) -> None:
    """Stop the server, let jobs stop at a safe point, close the engine (a worker thread)."""
    if server is not None:
        try:
            server.stop(timeout=10)
        except Exception:  # closing the engine matters more
            log.exception("stopping the IPC server failed")
    if engine is None:
        return
    try:  # jobs stop at their next safe point; what they fully stored stays
        engine.cancel_all()
    except Exception:  # close() still stops the writer
        log.exception("cancelling jobs at quit failed")
    engine.close()
