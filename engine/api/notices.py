"""What the engine announces through ``ContextEngine.subscribe``: a job moved, sources
changed, a build finished, the warm-up moved on, an alert was raised or cleared. They
carry ids, counts and names, never the text of a source or a query."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from engine.api.base import ErrorInfo, Plain
from engine.api.jobs import JobSnapshot
from engine.api.results import Payload
from engine.api.status import Alert

# The logger that says a store is being upgraded at its open (a schema migration: seconds
# on a big store, before any event can be subscribed to). Its records carry schema numbers
# and times only; front ends show them at INFO so that a long first open is never silent.
UPGRADE_LOGGER = "ctx.upgrade"


@dataclass(frozen=True)
class Event:
    """Base of what ``ContextEngine.subscribe`` delivers; ``kind`` names the event."""

    kind: ClassVar[str] = "event"


@dataclass(frozen=True)
class JobChanged(Event):
    """A job was queued, moved on, or ended."""

    kind: ClassVar[str] = "job"
    job: JobSnapshot


@dataclass(frozen=True)
class SourcesChanged(Event):
    """Sources were added, replaced or deleted (``reason``: ingest, delete, sync, repair;
    "vectors" when a job's stored sources got their vectors: they went from stage
    "keyword" to "ready")."""

    kind: ClassVar[str] = "sources"
    reason: str
    source_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class BuildItem(Plain):
    """What a build summary says of one payload item (no text)."""

    kind: str
    source: str
    tokens: int
    score: float
    lanes: Mapping[str, int]
    tier: str | None = None
    path: str = ""  # as PayloadItem's
    root: str | None = None
    lines: tuple[int, int] | None = None
    stage: str = ""


@dataclass(frozen=True)
class BuildDone(Event):
    """A build_context finished, from any caller (``origin``: "local", "ipc", "gui"...);
    sizes, timings and items, never the query or the payload's text."""

    kind: ClassVar[str] = "build"
    origin: str
    time: float
    duration_ms: float
    budget: int
    total_tokens: int
    items: tuple[BuildItem, ...]
    timings: Mapping[str, float]

    @classmethod
    def of(cls, payload: Payload, origin: str, started: float, duration_ms: float
           ) -> BuildDone:
        """What ``payload``'s build announces (its items without their text)."""
        items = tuple(BuildItem(i.kind, i.source, i.tokens, i.score, dict(i.lanes), i.tier,
                                i.path, i.root, i.lines, i.stage)
                      for i in payload.items)
        return cls(origin=origin, time=started, duration_ms=round(duration_ms, 3),
                   budget=payload.budget, total_tokens=payload.total_tokens, items=items,
                   timings=dict(payload.timings))


@dataclass(frozen=True)
class Warming(Event):
    """The engine's warm-up after open (``ContextEngine.warm_up``), stage by stage.

    ``stage``: "model" (the embedding model loads: queries and embedding wait for
    it), "keywords" (a big store's common terms are counted), "vectors" (the vector
    index's in-memory part is read; queries work meanwhile, slower), then "all".
    ``done`` is False when a stage starts and True when it ends, with ``seconds``
    and, if it failed, ``error`` (the model then loads again on first use).
    """

    kind: ClassVar[str] = "warming"
    stage: str
    done: bool
    seconds: float = 0.0
    error: ErrorInfo | None = None


@dataclass(frozen=True)
class AlertRaised(Event):
    kind: ClassVar[str] = "alert_raised"
    alert: Alert


@dataclass(frozen=True)
class AlertCleared(Event):
    kind: ClassVar[str] = "alert_cleared"
    name: str


@dataclass(frozen=True)
class WatchReport:
    """What the watched folders (``[ingest] watched_folders``, ``ContextEngine.watch``)
    are and did: the folders followed, those that cannot be (folder -> why), and, for
    an event, the ingest job queued (with the paths it reads), the sources removed, or
    the error of an ingest or delete."""

    folders: tuple[str, ...]
    problems: Mapping[str, str] = field(default_factory=dict)
    job: str | None = None
    paths: tuple[str, ...] = ()
    removed: int = 0
    error: ErrorInfo | None = None


@dataclass(frozen=True)
class WatchChanged(Event):
    """The watched folders changed (followed, or one cannot be) or did something."""

    kind: ClassVar[str] = "watch"
    report: WatchReport
