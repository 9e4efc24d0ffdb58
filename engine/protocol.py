"""The engine API that callers program against, in process or over the wire.

:class:`EngineAPI` is the one typed description of what the CLI, the MCP
server, the hooks and the IPC server call. ``engine.ContextEngine`` (in
process) and ``ipc``'s ``RemoteEngine`` (a running server) both implement it
and return the same ``engine.api`` objects. A test compares both classes with
this protocol parameter by parameter (names, kinds, defaults) and by return
annotation, so a change made to one side and not the other fails CI instead
of failing a user (``recall(index=...)`` once did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from engine import api
from engine.types import ConversationTurns, LiveItems

__all__ = ["ENGINE_METHODS", "EngineAPI"]


@runtime_checkable
class EngineAPI(Protocol):
    """What both ContextEngine and RemoteEngine offer (see ContextEngine for meanings)."""

    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str: ...

    def job(self, job_id: str) -> api.JobSnapshot: ...

    def jobs(self) -> list[api.JobSnapshot]: ...

    def cancel_job(self, job_id: str) -> api.JobSnapshot: ...

    def wait(self, job_id: str, timeout: float | None = None) -> api.JobSnapshot: ...

    def build_context(self, query: str,
                      live: LiveItems | None = None, conversation: ConversationTurns | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> api.Payload: ...

    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False
               ) -> list[api.SearchHit]: ...

    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False,
               cwd: str | None = None) -> api.RecallResult: ...

    def sync(self, paths: Sequence[str] | None = None) -> api.SyncResult: ...

    def sources(self, *, project: str | None = None) -> list[api.SourceInfo]: ...

    def delete(self, source: str | int, *, wait: bool = True) -> api.DeleteResult: ...

    def compact(self, *, wait: bool = True) -> api.CompactResult: ...

    def rotate_key(self, *, wait: bool = True) -> api.KeyChangeResult: ...

    def forget_folder(self, folder: str) -> bool: ...

    def status(self) -> api.Status: ...

    def metrics(self) -> api.MetricsSnapshot: ...

    def audit(self, since: float | None = None, limit: int = 100) -> list[api.AuditEntry]: ...

    def backup(self, path: str, *, include_vectors: bool | None = None) -> api.BackupResult: ...

    def verify_backup(self, path: str) -> api.BackupResult: ...

    def export(self, path: str, *, fmt: str = "jsonl", kind: str | None = None,
               project: str | None = None) -> api.ExportResult: ...

    def close(self) -> None: ...


ENGINE_METHODS: tuple[str, ...] = tuple(
    name for name in EngineAPI.__dict__
    if not name.startswith("_") and callable(EngineAPI.__dict__[name]))
