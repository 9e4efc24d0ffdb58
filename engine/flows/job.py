"""A job's record (``Job``) and what the runner asks of a job body and of its
background stage (``JoinableWork``, ``Stage``); the runner is ``engine.flows.jobs``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.api import ErrorInfo, FileIssue, JobSnapshot, SourceRef


@dataclass
class Job:
    id: str
    kind: str
    state: str = "queued"  # queued | running | done | failed | cancelled
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    files_total: int = 0
    files_done: int = 0
    files_skipped: int = 0
    files_unchanged: int = 0
    bytes: int = 0
    bytes_total: int = 0  # when known ahead (transcript sync): for a time-left estimate
    chunks: int = 0
    current: str = ""
    errors: list[dict[str, str]] = field(default_factory=list)  # failures: {path, reason}
    skipped: list[dict[str, str]] = field(default_factory=list)  # left out on purpose
    ignored: dict[str, int] = field(default_factory=dict)  # entries ignore rules left out
    existing: list[tuple[int, str]] = field(default_factory=list)  # (id, title) holding it
    sources: list[int] = field(default_factory=list)
    # sources it was given again as they are stored: their vectors, if still waiting,
    # are its own work too (an ingest again after an interrupted one finishes them)
    unchanged: list[int] = field(default_factory=list)
    error: ErrorInfo | None = None
    stage: str = ""  # "keyword", then "vectors" (see engine.flows.jobs)
    to_embed: int = 0  # chunks of this job's sources that need vectors
    embedded: int = 0  # of those, how many have them
    vector_sources: list[int] = field(default_factory=list)  # sources still without vectors
    model_texts: int = 0  # texts the model embedded for this job's sources
    waiting: str = ""  # "model" while the vector stage waits for the model to load
    stage_started: float | None = None  # when its current stage began (its rate, time left)
    ahead: str = ""  # the job submitted just before this one
    inputs: tuple[str, ...] = ()  # what a "paths" job was asked to ingest
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_event.is_set()

    def check(self) -> None:
        """A safe point: raise :class:`Cancelled` when the job was asked to stop."""
        if self.cancel_event.is_set():
            raise Cancelled(self.id)

    def snapshot(self, behind: str = "", paused: bool = False) -> JobSnapshot:
        """As it stands; ``behind``: the job a queued one waits for."""
        waiting = self.waiting
        if self.state == "queued" and behind:
            waiting = "job"
        elif paused and self.state in ("queued", "running"):
            waiting = "paused"
        return JobSnapshot(
            id=self.id, kind=self.kind, state=self.state,  # type: ignore[arg-type]
            created=self.created, started=self.started, finished=self.finished,
            files_total=self.files_total, files_done=self.files_done,
            files_skipped=self.files_skipped, files_unchanged=self.files_unchanged,
            bytes=self.bytes, bytes_total=self.bytes_total, chunks=self.chunks,
            current=self.current, errors=tuple(FileIssue.from_dict(e) for e in self.errors),
            sources=tuple(self.sources), error=self.error, stage=self.stage,
            to_embed=self.to_embed, embedded=self.embedded,
            skipped=tuple(FileIssue.from_dict(e) for e in self.skipped),
            ignored=dict(self.ignored),
            existing=tuple(SourceRef(i, t) for i, t in self.existing),
            waiting=waiting, behind=behind if self.state == "queued" else "",
            inputs=self.inputs, stage_started=self.stage_started)


class Cancelled(Exception):
    """Raised at a job's safe point after ``cancel()``; the runner marks the job cancelled."""


Work = Callable[[Job, Callable[[], None]], None]

# A job counting bytes (a backup, a key rotation's export) is announced this often (s).
BYTES_SHOWN_S = 0.1


def byte_progress(job: Job, announce: Callable[[], None]) -> Callable[[int, int], None]:
    """A ``(done, total)`` byte counter for ``job``: the counts are kept on it and
    announced at most every ``BYTES_SHOWN_S`` (and at the end); in between, a cancel is
    still heard (``job.check()``)."""
    shown = [0.0]

    def step(done: int, total: int) -> None:
        job.bytes, job.bytes_total = done, total
        now = time.monotonic()
        if now - shown[0] >= BYTES_SHOWN_S or done >= total:
            shown[0] = now
            announce()
        else:
            job.check()
    return step


class Stage(Protocol):
    """A background stage the writer thread runs between jobs (the vector stage)."""

    def step(self, jobs: list[Job]) -> bool:
        """Work a little (about half a second) for ``jobs`` (in their order), taking
        from their ``vector_sources`` what it finished; False when it could do
        nothing now (the model still loading), so the caller waits a moment."""
        ...

    def staged(self, kind: str) -> bool:
        """Whether jobs of ``kind`` run in stages (keyword, then vectors)."""
        ...

    def begin(self, job: Job) -> None:
        """``job``'s body starts running (what it stores from now on is its own)."""
        ...

    def adopt(self, job: Job, others: list[Job]) -> list[int]:
        """``job`` enters its vector stage: give it its own waiting sources (the
        background job, kind "vectors": every one no job in ``others`` owns); returns
        the older waiting sources nobody owns, for a background job."""
        ...


@runtime_checkable
class JoinableWork(Protocol):
    """A job body that may run together with the jobs queued right behind it."""

    def __call__(self, job: Job, progress: Callable[[], None]) -> None: ...

    def joins(self, other: object) -> bool:
        """Whether ``other`` (a queued job's body) may run in one group with this one."""
        ...

    def run_joined(self, group: list[tuple[Job, Any]], progress: Callable[[Job], None]
                   ) -> dict[str, BaseException | None]:
        """Run ``group`` (this body first); each job's outcome by id (None: done)."""
        ...
