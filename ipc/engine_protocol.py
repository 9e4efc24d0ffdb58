"""The engine API that callers program against, in process or over the wire.

:class:`EngineAPI` is the one typed description of what the CLI, the MCP
server and the hooks call. ``engine.facade.ContextEngine`` (in process) and
``ipc.remote.RemoteEngine`` (a running server) both implement it; a test
compares their signatures with this protocol parameter by parameter (names,
kinds and defaults), so a parameter added to one side and not the other fails
CI instead of failing a user (``recall(index=...)`` once did).

Results may differ in type but not in content: the in-process engine returns
dataclasses (``ContextPayload``, ``SearchHit``) where the remote one returns
their JSON form; ``ipc.cli.backend.plain`` turns either into plain data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["ENGINE_METHODS", "EngineAPI"]


@runtime_checkable
class EngineAPI(Protocol):
    """What both ContextEngine and RemoteEngine offer (see ContextEngine for meanings)."""

    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str: ...

    def job(self, job_id: str) -> dict[str, Any]: ...

    def jobs(self) -> list[dict[str, Any]]: ...

    def cancel_job(self, job_id: str) -> dict[str, Any]: ...

    def wait(self, job_id: str, timeout: float | None = None) -> dict[str, Any]: ...

    def build_context(self, query: str, live: Sequence[Mapping[str, Any]] | None = None,
                      conversation: Sequence[Mapping[str, Any]] | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> Any: ...

    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False) -> list[Any]: ...

    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False) -> dict[str, Any]: ...

    def sync(self, paths: Sequence[str] | None = None) -> dict[str, Any]: ...

    def sources(self, *, project: str | None = None) -> list[dict[str, Any]]: ...

    def delete(self, source: str | int) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def metrics(self) -> dict[str, Any]: ...

    def audit(self, since: float | None = None, limit: int = 100) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


ENGINE_METHODS: tuple[str, ...] = tuple(
    name for name in EngineAPI.__dict__
    if not name.startswith("_") and callable(EngineAPI.__dict__[name]))
