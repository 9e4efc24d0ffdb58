"""Run a ctx server for one data dir until told to stop.

``serve()`` owns the whole life of a headless server: it opens the engine
(which takes the data dir lock, so a second server on the same data dir fails
with ``store_locked`` before touching anything), binds, writes the connection
file, serves until SIGTERM/SIGINT or a ``shutdown`` request, and then removes
the file and closes the engine. ``python -m ipc.serve`` does the same from a
shell and prints one JSON line (without the key) once it is ready.
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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from engine.errors import CtxError
from ipc.connection import (
    ConnectionInfo,
    connection_file_path,
    default_endpoint,
    make_info,
    remove_connection_file,
    write_connection_file,
)
from ipc.protocol import IpcConfig
from ipc.server import Server

__all__ = ["main", "serve"]

EngineFactory = Callable[[Path | None], Any]


def _open_context_engine(data_dir: Path | None) -> Any:
    from engine.facade import ContextEngine

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
    from engine.config_base import from_dict

    table = getattr(getattr(engine, "config", None), "ipc", None) or {}
    return from_dict(IpcConfig, table, "ipc")


def serve(data_dir: Path | None = None, *, endpoint: str | None = None, workers: int = 4,
          ready: Callable[[ConnectionInfo], None] | None = None,
          config: IpcConfig | None = None, engine_factory: EngineFactory | None = None) -> int:
    """Serve the engine of ``data_dir`` (None: $CTX_HOME or the platform default) until stopped.

    ``ready`` is called with the connection info once clients can connect.
    ``engine_factory`` replaces ``ContextEngine.open`` (tests, embedding).
    Returns 0 after a clean stop; engine errors (StoreLocked, WrongKey...) propagate.
    """
    engine = (engine_factory or _open_context_engine)(data_dir)
    warm_up = getattr(engine, "warm_up", None)
    if warm_up is not None:
        warm_up()  # load the model in the background while clients connect
    server: Server | None = None
    conn_path: Path | None = None
    try:
        root = Path(engine.data_dir)
        key = secrets.token_hex(32)
        config = config or ipc_config(engine)
        server = Server(engine, endpoint or config.endpoint or default_endpoint(root), key,
                        workers=workers, config=config)
        info = make_info(server.endpoint, key, root)
        conn_path = write_connection_file(info, connection_file_path(root))
        with _stop_on_signals(server.stop):
            if ready is not None:
                ready(info)
            server.run()
    finally:
        if conn_path is not None:
            remove_connection_file(conn_path, pid=os.getpid())
        if server is not None:
            server.close()
        engine.close()
    return 0


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

    def announce(info: ConnectionInfo) -> None:
        public = {k: v for k, v in info.items() if k != "key"}
        print(json.dumps({"ready": True, **public}), flush=True)

    try:
        return serve(args.data_dir, endpoint=args.endpoint, workers=args.workers,
                     ready=announce, engine_factory=engine_factory)
    except CtxError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr, flush=True)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
