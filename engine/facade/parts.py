"""What the mixins of ``ContextEngine`` (``jobs``, ``sessions``, ``upkeep``) use of the
engine: the parts ``ContextEngine.__init__`` sets, and the calls the core defines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.api import JobSnapshot
    from engine.events import Announcer
    from engine.flows.interrupted import InterruptedJobs
    from engine.flows.jobs import JobRunner
    from engine.flows.runtime import Runtime
    from engine.flows.vector_stage import VectorStage
    from engine.flows.writer import Writer


class EngineParts:
    """The engine's parts, as the mixins see them (annotations only: nothing here runs)."""

    rt: Runtime
    data_dir: Path
    _key: bytes  # seals backups
    _jobs: JobRunner
    _writer: Writer
    _stage: VectorStage
    _events: Announcer
    _interrupted: InterruptedJobs
    _adapt_job: str = ""  # the learned reader's last fit job (engine.facade.sessions)

    if TYPE_CHECKING:
        def _live(self) -> Runtime: ...
        def _wait_ok(self, job_id: str) -> JobSnapshot: ...
        def _refit(self, *, force: bool = False) -> str: ...
        def ingest(self, *, paths: Sequence[str] = ..., text: str | None = ...,
                   title: str | None = ..., kind: str = ..., external_id: str | None = ...,
                   wait: bool = ...) -> str: ...
        def _queue_paths(self, paths: Sequence[str], leave: Sequence[str] = ...
                         ) -> Any: ...
