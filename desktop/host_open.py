"""Opening and closing the engine for the desktop host (worker threads only).

``open_and_serve`` opens the store, subscribes to the engine's events (before
the warm-up, so the model's loading is heard), starts the warm-up, binds the
in-process IPC server (the same ServerHost as ``ctx serve``) and starts the
watched folders (``engine.watch()``, as ``ctx serve`` does). ``close_all`` undoes
it in the quit order: stop watching, stop the server, stop jobs at a safe point
(unless they were let finish), close the engine. Neither touches Qt.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import Event, Status, probe_store

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


def store_exists(data_dir: Path) -> bool:
    """Whether a store is there already (read from its key record; opens nothing)."""
    try:
        return probe_store(data_dir).exists
    except Exception:  # noqa: BLE001 - the open that follows says what is wrong
        return True


@dataclass
class Opened:
    """What a successful open hands the GUI thread."""

    engine: Any
    server: Any  # ServerHost, or None without IPC
    server_error: BaseException | None
    config: Any
    status: Status
    unsubscribe: Callable[[], None]
    created: bool  # the store did not exist before this open


def open_and_serve(factory: EngineFactory, data_dir: Path, passphrase: str | None, *,
                   serve: bool, workers: int, on_event: Callable[[Event], None],
                   existed: bool = True) -> Opened:
    """Worker: open the engine, hear its events (the watched folders' too), warm it up,
    serve IPC, watch folders."""
    engine = factory(data_dir, passphrase)
    unsubscribe: Callable[[], None] = lambda: None
    try:
        unsubscribe = engine.subscribe(on_event)
        warm_up = getattr(engine, "warm_up", None)
        if warm_up is not None:
            warm_up()  # in the background: "ready" once the model is loaded
        server, server_error = None, None
        if serve:
            from ipc.serve import ServerHost

            server = ServerHost(engine, workers=workers)
            try:
                server.start()
            except Exception as exc:  # noqa: BLE001 - the app works without IPC
                server, server_error = None, exc
        engine.watch()  # the config's [ingest] watched_folders: WatchChanged events
        status = engine.status()  # after subscribing: no alert falls between the two
        return Opened(engine, server, server_error, engine.config, status, unsubscribe,
                      created=not existed)
    except BaseException:
        unsubscribe()
        engine.close()
        raise


def close_all(engine: Any, server: Any, *, stop_jobs: bool = True) -> None:
    """Stop watching and serving, stop jobs at a safe point, close the engine (a worker).

    Jobs stopped here are remembered by the engine and listed at the next open.
    """
    if engine is not None:
        try:
            engine.watch([])  # no change is ingested while the server and the jobs stop
        except Exception:  # closing the engine matters more
            log.exception("stopping the watched folders failed")
    if server is not None:
        try:
            server.stop(timeout=10)
        except Exception:  # closing the engine matters more
            log.exception("stopping the IPC server failed")
    if engine is None:
        return
    if stop_jobs:
        try:  # jobs stop at their next safe point; what they fully stored stays
            engine.cancel_all()
        except Exception:  # close() still stops the writer
            log.exception("cancelling jobs at quit failed")
    engine.close()
