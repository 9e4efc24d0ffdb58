"""Which engine a CLI command talks to: the running server, or the store opened directly.

Commands that need the model talk to a server, started in the background when
none runs (see ``ipc.cli.autostart``); others open the store themselves when
no server runs, waiting behind another process that holds it. ``--local``
forces the store to be opened in this process. Both backends return plain
JSON-ready data, so a command's output does not depend on which one served it.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import KeyUnavailable, StoreLocked

if TYPE_CHECKING:
    from engine.facade import ContextEngine


def plain(value: Any) -> Any:
    """JSON-ready view of engine results (payloads, hits, lists of them)."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


AUDITED = {"build_context", "search", "recall", "delete", "sources", "ingest"}


def _counts(result: Any) -> dict[str, int]:
    """Counts for the audit log (never content)."""
    if isinstance(result, list):
        return {"results": len(result)}
    if isinstance(result, dict):
        out = {k: int(v) for k, v in result.items()
               if k in ("total_tokens", "budget", "deleted") and isinstance(v, int)}
        if isinstance(result.get("items"), list):
            out["items"] = len(result["items"])
        if isinstance(result.get("hits"), list):
            out["results"] = len(result["hits"])
        return out
    return {}


class LocalBackend:
    """The store opened in this process; closed when the command ends."""

    remote = False

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.engine, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = plain(fn(*args, **kwargs))
            if name in AUDITED:
                self.engine.audit_event(name, caller_pid=os.getpid(), ids=[],
                                        counts=_counts(result))
            return result
        return call

    def close(self) -> None:
        self.engine.close()


class RemoteBackend:
    remote = True

    def __init__(self, remote: Any) -> None:
        self.remote_engine = remote

    def __getattr__(self, name: str) -> Any:
        return getattr(self.remote_engine, name)

    def close(self) -> None:
        close = getattr(self.remote_engine, "close", None)
        if close is not None:
            close()


def _ask_passphrase() -> str | None:
    if os.environ.get("CTX_PASSPHRASE") or os.environ.get("CTX_KEY_FILE"):
        return None
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass("ctx passphrase: ")
    return None


def open_engine(data_dir: str | Path | None) -> ContextEngine:
    """Open the store, asking for its passphrase on a terminal when nothing else unlocks it.

    Only the default data dir is created on first use; a ``--data-dir`` must hold a
    store already (`ctx init` makes one), so that a typo is an error, not a new store.
    """
    from engine.facade import ContextEngine

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


def _open_local_waiting(data_dir: str | None) -> LocalBackend | RemoteBackend:
    """The store opened here; behind a holder, wait for its server or for the lock to free."""
    import time

    from ipc.remote import connect

    end = time.monotonic() + lock_wait_s()
    said = False
    while True:
        try:
            return LocalBackend(open_engine(data_dir))
        except StoreLocked:
            remote = connect(Path(data_dir) if data_dir else None)
            if remote is not None:
                return RemoteBackend(remote)
            if not said:
                _notice("ctx: another ctx process holds the store; waiting for it...")
                said = True
            if time.monotonic() >= end:
                raise
            time.sleep(0.2)


def open_backend(data_dir: str | None, *, local_only: bool = False, need_model: bool = False
                 ) -> LocalBackend | RemoteBackend:
    """The running server for this data dir if there is one, else (see the module doc)."""
    if local_only:
        return LocalBackend(open_engine(data_dir))
    from ipc.remote import RemoteEngine, connect

    remote = connect(Path(data_dir) if data_dir else None)
    if remote is not None:
        return RemoteBackend(remote)
    if need_model:
        from engine import probe_store
        from ipc.cli.autostart import ensure_server

        probe = probe_store(data_dir)
        if probe.key == "none":
            if sys.stdin is not None and sys.stdin.isatty():
                return LocalBackend(open_engine(data_dir))  # asks for the passphrase here
            raise probe.problem or KeyUnavailable("no key to unlock the store here")
        info = ensure_server(probe.data_dir, wait_s=lock_wait_s(), notice=_notice)
        root = info["data_dir"]
        from ipc.connection import find_live

        return RemoteBackend(RemoteEngine(info, rediscover=lambda: find_live(root)))
    return _open_local_waiting(data_dir)
