"""Which engine a CLI command talks to: the running server, or the store opened directly.

Both are wrapped so that every call returns plain JSON-ready data.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import sys
from pathlib import Path
from typing import Any

from engine.errors import KeyUnavailable
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
                self.engine.audit_event(f"cli:{name}", caller_pid=os.getpid(), ids=[],
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
    create = data_dir is None
    try:
        return ContextEngine.open(data_dir, create=create)
    except KeyUnavailable:
        passphrase = _ask_passphrase()
        if passphrase is None:
            raise
        return ContextEngine.open(data_dir, passphrase=passphrase, create=create)


def open_backend(data_dir: str | None, *, local_only: bool = False
                 ) -> LocalBackend | RemoteBackend:
    """The running server for this data dir if there is one, else the store itself."""
    if not local_only:
        from ipc.remote import connect

        remote = connect(Path(data_dir) if data_dir else None)
        if remote is not None:
            return RemoteBackend(remote)
    return LocalBackend(open_engine(data_dir))
