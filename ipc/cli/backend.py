"""Which engine a CLI command talks to: the running server, or the store opened directly.

Commands that need the model talk to a server, started in the background when
none runs (see ``ipc.autostart``); others open the store themselves when
no server runs, waiting behind another process that holds it. ``--local``
forces the store to be opened in this process. Either way the command gets an
``engine.EngineAPI`` (a ``ContextEngine`` or a ``RemoteEngine``) whose results
are the same typed objects, so its output does not depend on which one served
it. The CLI's own calls are audited by the engine as the caller "cli"
(``ipc.cli.main`` says so once for the whole command).
"""

from __future__ import annotations

import getpass
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine import KeyUnavailable, StoreLocked, headless_key_available

if TYPE_CHECKING:  # the engine itself loads only where a command opens the store
    from engine import ContextEngine, EngineAPI


def served(engine: EngineAPI) -> bool:
    """Whether ``engine`` is a running server's (not the store opened in this process)."""
    from ipc.remote import RemoteEngine

    return isinstance(engine, RemoteEngine)


def _ask_passphrase() -> str | None:
    if headless_key_available():
        return None
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass("ctx passphrase: ")
    return None


def open_engine(data_dir: str | Path | None) -> ContextEngine:
    """Open the store, asking for its passphrase on a terminal when nothing else unlocks it.

    Only the default data dir is created on first use; a ``--data-dir`` must hold a
    store already (`ctx init` makes one), so that a typo is an error, not a new store.
    """
    from engine import ContextEngine

    create = data_dir is None
    try:
        return ContextEngine.open(data_dir, create=create)
    except KeyUnavailable:
        passphrase = _ask_passphrase()
        if passphrase is None:
            raise
        return ContextEngine.open(data_dir, passphrase=passphrase, create=create)


def _notice(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def lock_wait_s() -> float:
    """How long a command waits behind another process holding the store ($CTX_LOCK_WAIT_S)."""
    try:
        return max(0.0, float(os.environ.get("CTX_LOCK_WAIT_S", "120")))
    except ValueError:
        return 120.0


def _open_local_waiting(data_dir: str | None) -> EngineAPI:
    """The store opened here; behind a holder, wait for its server or for the lock to free."""
    import time

    from ipc.remote import connect

    end = time.monotonic() + lock_wait_s()
    said = False
    while True:
        try:
            return open_engine(data_dir)
        except StoreLocked:
            remote = connect(Path(data_dir) if data_dir else None)
            if remote is not None:
                return remote
            if not said:
                _notice("ctx: another ctx process holds the store; waiting for it...")
                said = True
            if time.monotonic() >= end:
                raise
            time.sleep(0.2)


def stop_command(data_dir: str | None) -> str:
    """The `ctx stop` that stops the engine of ``data_dir``, as the user would type it
    (with the --data-dir they gave: a bare `ctx stop` stops the default store's)."""
    return f"`ctx --data-dir {shlex.quote(data_dir)} stop`" if data_dir else "`ctx stop`"


def _hint_served(exc: StoreLocked, data_dir: str | None) -> None:
    """``--local`` on a store a running engine serves: say that the command works
    without ``--local`` (it then asks that engine)."""
    from ipc.discovery import find_live

    try:
        info = find_live(Path(data_dir) if data_dir else None)
    except Exception:  # noqa: BLE001 - a hint only: the error stands without it
        return
    if info is not None:
        exc.message += (f"; a ctx engine serves this store (pid {info['pid']}): drop --local "
                        f"to ask it, or stop it ({stop_command(data_dir)}) to open the store "
                        "in this process")


def open_backend(data_dir: str | None, *, local_only: bool = False, need_model: bool = False
                 ) -> EngineAPI:
    """The running server for this data dir if there is one, else (see the module doc)."""
    if local_only:
        try:
            return open_engine(data_dir)
        except StoreLocked as exc:
            _hint_served(exc, data_dir)
            raise
    from ipc.remote import RemoteEngine, connect

    remote = connect(Path(data_dir) if data_dir else None)
    if remote is not None:
        return remote
    if need_model:
        from engine import probe_store
        from ipc.autostart import ensure_server

        probe = probe_store(data_dir)
        if probe.key == "none":
            if sys.stdin is not None and sys.stdin.isatty():
                return open_engine(data_dir)  # asks for the passphrase here
            raise probe.problem or KeyUnavailable("no key to unlock the store here")
        info = ensure_server(probe.data_dir, wait_s=lock_wait_s(), notice=_notice)
        root = info["data_dir"]
        from ipc.discovery import find_live

        return RemoteEngine(info, rediscover=lambda: find_live(root))
    return _open_local_waiting(data_dir)
