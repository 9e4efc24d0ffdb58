"""The engine's public results and events: typed, frozen, plain data.

Every result that ``ContextEngine`` (in process) and ``ipc``'s ``RemoteEngine``
(over the wire) return is one of these classes, so a caller reads attributes,
never string keys, whichever engine answered. ``to_dict()`` is the JSON form
that travels on the wire (docs/wire.md) and ``from_dict()`` rebuilds the object
from it; unknown keys are ignored on the way in (a newer minor version of the
protocol only adds fields).

Events are what the engine announces through ``ContextEngine.subscribe``: a
job moved, sources changed, a build finished, an alert was raised or cleared.
They carry ids, counts and names, never the text of a source or a query.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self, TypeVar

from engine.errors import CtxError, error_from_dict

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
JOB_STATES: tuple[str, ...] = ("queued", "running", "done", "failed", "cancelled")
FINAL_JOB_STATES: tuple[str, ...] = ("done", "failed", "cancelled")
TIERS: tuple[str, ...] = ("full", "gist", "micro")

T = TypeVar("T")


def _known(cls: type[T], data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of dataclass ``cls`` (newer fields ignored)."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return {k: v for k, v in data.items() if k in names}


class _Plain:
    """to_dict / from_dict for dataclasses whose fields are JSON values already."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(**_known(cls, data))


def _jsonable(value: Any) -> Any:
    if isinstance(value, _Plain):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


# -- errors ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorInfo(_Plain):
    """An error as data (a failed job's, an alert's cause): stable code and name."""

    code: int
    name: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, exc: CtxError) -> ErrorInfo:
        return cls(exc.code, exc.name, exc.message, dict(exc.details))

    def to_error(self) -> CtxError:
        """The engine's own exception class for this error (to raise it)."""
        return error_from_dict(self.to_dict())


# -- jobs -----------------------------------------------------------------------------

@dataclass(frozen=True)
class FileIssue(_Plain):
    """A file a job did not store, by path, with a stable reason (``REJECT_*``) and,
    for some reasons, which kind of it (a blob's "base64", "minified"...)."""

    path: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class SourceRef(_Plain):
    """A stored source named by id and title (the one that already holds a text)."""

    id: int
    title: str


# Where a source stands: "keyword" (stored and keyword-searchable, its vectors not yet
# made: the vector lane does not have it) or "ready" (both lanes).
SOURCE_STAGES: tuple[str, ...] = ("keyword", "ready")
# What a running job does now: "keyword" (storing text, keyword-searchable as each
# file is stored), then "vectors" (embedding what it stored); "" for jobs without stages.
JOB_STAGES: tuple[str, ...] = ("", "keyword", "vectors")


@dataclass(frozen=True)
class JobProgress(_Plain):
    """How far a job is, computed by the engine from what it knows of the job's stages:
    the one description the app's tray, job card and quit dialog and ``ctx status`` read
    (engine.flows.job_progress).

    ``stage``: "queued", "text" (files read and their text stored: keyword-searchable),
    "vectors" (the stored chunks embedded for search by meaning), "work" (a job of one
    stage: backup, verify, delete, repair...), or the final state ("done", "failed",
    "cancelled"). ``step`` of ``steps``: the stage's place (1 of 2, 2 of 2; 1 of 1).
    ``done`` of ``total`` ``unit`` ("files", "chunks", "bytes", "sources" for a delete;
    total 0: not known yet or not counted, as a compaction's parts)
    are the stage's own; ``percent`` is the stage's (None while its total is unknown;
    100 only when the stage is through). ``current``: what it works on now.
    ``seconds_left``: the stage's time left at its rate so far (None: not known yet).
    ``files_stored``: every file's text is stored, only vectors are left.
    """

    stage: str = "queued"
    step: int = 0
    steps: int = 1
    done: int = 0
    total: int = 0
    unit: str = "files"
    percent: int | None = None
    current: str = ""
    seconds_left: float | None = None
    files_stored: bool = False


@dataclass(frozen=True)
class JobSnapshot(_Plain):
    """One ingestion (or sync, repair, delete) job as it stands.

    ``errors`` are failures (unreadable, malformed, not written): they raise the
    ``ingestion.failed`` alert; ``skipped`` are files left out on purpose (empty,
    binary, a blob...), each with its reason, and alert nothing. ``ignored``
    counts the entries of walked folders that ignore rules left out, by rule
    (``gitignore``, ``ctxignore``, ``excluded``). ``to_embed`` / ``embedded``:
    chunks of this job's sources that need vectors, and how many have them.
    ``existing``: sources that already held a text this job was given (content
    dedupe: nothing new was stored for it). ``waiting`` says why a job does not
    move: "job" (queued behind job ``behind``), "model" (the model is loading),
    "paused"; "" otherwise.
    """

    id: str
    kind: str
    state: JobState
    created: float
    started: float | None = None
    finished: float | None = None
    files_total: int = 0
    files_done: int = 0
    files_skipped: int = 0
    files_unchanged: int = 0
    bytes: int = 0
    bytes_total: int = 0
    chunks: int = 0
    current: str = ""
    errors: tuple[FileIssue, ...] = ()
    sources: tuple[int, ...] = ()
    error: ErrorInfo | None = None
    stage: str = ""
    to_embed: int = 0
    embedded: int = 0
    skipped: tuple[FileIssue, ...] = ()
    ignored: Mapping[str, int] = field(default_factory=dict)
    existing: tuple[SourceRef, ...] = ()
    waiting: str = ""
    behind: str = ""
    # What a "paths" job was asked to ingest (files and folders, absolute), as given.
    inputs: tuple[str, ...] = ()
    # A job an earlier run of the engine left unfinished (quit, crash): listed by
    # ``ContextEngine.interrupted_jobs`` with its last known counts, state "cancelled".
    interrupted: bool = False
    # How far it is, stage by stage (JobProgress), as every front end says it.
    # When its current stage began (the vector stage's rate and time left are its own).
    stage_started: float | None = None
    # How far it is, stage by stage, described from the fields above (never given: a
    # copy made with dataclasses.replace describes itself again).
    progress: JobProgress = field(init=False, compare=False, default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "progress", describe_progress(self))

    @property
    def final(self) -> bool:
        return self.state in FINAL_JOB_STATES

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSnapshot:
        d = _known(cls, data)
        d["errors"] = tuple(FileIssue.from_dict(e) for e in d.get("errors") or ())
        d["skipped"] = tuple(FileIssue.from_dict(e) for e in d.get("skipped") or ())
        d["existing"] = tuple(SourceRef.from_dict(e) for e in d.get("existing") or ())
        d["ignored"] = {str(k): int(v) for k, v in (d.get("ignored") or {}).items()}
        d["sources"] = tuple(int(s) for s in d.get("sources") or ())
        d["inputs"] = tuple(str(p) for p in d.get("inputs") or ())
        err = d.get("error")
        d["error"] = ErrorInfo.from_dict(err) if isinstance(err, Mapping) else None
        d.pop("progress", None)  # described again here, from the fields
        return cls(**d)


# A rate measured over less time or fewer units than this is noise: no time left yet.
RATE_AFTER_S = 2.0
RATE_AFTER_UNITS = 1


def describe_progress(job: Any, now: float | None = None) -> JobProgress:
    """``job``'s progress (a ``Job`` record or a ``JobSnapshot``): see ``JobProgress``.

    A staged ingestion job ("keyword" then "vectors" in its ``stage``) has two stages:
    its files read and their text stored, then their chunks embedded. Any other job has
    one, counted in files when it has more than one, else in bytes (a backup), else not
    counted. Each stage's time left is its remaining units at its own rate so far, so a
    long vector stage never reads as 99 % of a file count."""
    state = str(job.state)
    staged = job.stage in ("keyword", "vectors")
    steps = 2 if staged else 1
    current = str(job.current or "")
    if job.stage == "vectors":
        step, stage, unit = 2, "vectors", "chunks"
        done, total = int(job.embedded), int(job.to_embed)
    else:
        step, stage = 1, ("text" if staged else "work")
        if job.kind == "delete":  # sources removed of those it names
            unit, done, total = "sources", int(job.files_done), int(job.files_total)
        elif job.kind == "compact":  # parts, not counted (``current`` names the part)
            unit, done, total = "parts", 0, 0
        elif job.files_total > 1 or not job.bytes_total:  # else bytes (one file: a backup)
            unit, done, total = "files", int(job.files_done), int(job.files_total)
        else:
            unit, done, total = "bytes", int(job.bytes), int(job.bytes_total)
    done = min(max(done, 0), total) if total else max(done, 0)
    files_stored = job.stage == "vectors" or (state == "done" and bool(job.files_total))
    if state in FINAL_JOB_STATES:
        percent = 100 if state == "done" else (int(100 * done / total) if total else None)
        return JobProgress(stage=state, step=step, steps=steps, done=done, total=total,
                           unit=unit, percent=percent, current="", seconds_left=None,
                           files_stored=files_stored)
    if state == "queued":
        return JobProgress(stage="queued", step=0, steps=steps, unit=unit)
    # The stage's own share: 100 only once it is through (the last unit may be writing).
    percent = min(99, int(100 * done / total)) if total else None
    if stage == "vectors" and job.waiting == "model":
        current = "waiting for the embedding model to load"
    elif stage == "vectors" and not current:
        current = f"embedding {total - done:,} chunks" if total > done else ""
    return JobProgress(stage=stage, step=step, steps=steps, done=done, total=total,
                       unit=unit, percent=percent, current=current,
                       seconds_left=_left(job, done, total - done, now),
                       files_stored=files_stored)


def _left(job: Any, moved: int, remaining: int, now: float | None) -> float | None:
    """Seconds left at the stage's rate so far (None until the rate means something)."""
    began = getattr(job, "stage_started", None) or job.started
    if not began or remaining <= 0 or moved < RATE_AFTER_UNITS:
        return None
    elapsed = (now or time.time()) - began
    if elapsed < RATE_AFTER_S:
        return None
    return remaining * elapsed / moved


# -- reading --------------------------------------------------------------------------

def _lines(value: Any) -> tuple[int, int] | None:
    """A ``[first, last]`` line range from JSON (a list) as a tuple; None when absent."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


@dataclass(frozen=True)
class SearchHit(_Plain):
    """One ranked chunk; ``lanes`` maps lane name to its 1-based rank there.

    Where it is, for a file: ``path`` relative to ``root``, the folder it was ingested
    from (``path`` is the absolute path when no root was recorded), and ``lines``, its
    first and last line (1-based, inclusive) for text and code; "", None and None for
    sources that are not files.
    """

    chunk_id: int
    source_id: int
    source: str  # the source's uri (a path for files)
    title: str
    kind: str  # chunk kind
    source_kind: str
    text: str
    score: float
    lanes: Mapping[str, int]
    time: float | None = None
    ordinal: int = 0
    tokens: int = 0
    heading: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""
    root: str | None = None
    lines: tuple[int, int] | None = None
    stage: str = "ready"  # the source's stage (SOURCE_STAGES): "keyword" until its vectors

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        d = _known(cls, data)
        d["lines"] = _lines(d.get("lines"))
        return cls(**d)


@dataclass(frozen=True)
class PayloadItem(_Plain):
    """One item that made it into a context payload.

    ``kind`` is a chunk kind, ``surrogate``, ``live:<kind>`` or ``conversation``;
    ``tier`` is the surrogate tier it was packed at (None unless a surrogate);
    ``why`` a short machine-readable reason ("rerank", "neighbour", ...);
    ``stage`` the stage of the item's source (``SOURCE_STAGES``: "keyword" while its
    vectors are being made, so only the keyword lanes could find it), "" for live
    items and conversation turns.
    """

    kind: str
    source: str
    title: str
    time: float | None
    tokens: int  # tokens of this item's rendered block, as packed
    score: float
    lanes: Mapping[str, int]
    why: str
    chunk_ids: tuple[int, ...] = ()
    tier: str | None = None
    path: str = ""  # as SearchHit's: the file relative to root, for memory from files
    root: str | None = None
    lines: tuple[int, int] | None = None
    stage: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["score"] = round(self.score, 6)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PayloadItem:
        d = _known(cls, data)
        d["chunk_ids"] = tuple(int(c) for c in d.get("chunk_ids") or ())
        d["lines"] = _lines(d.get("lines"))
        return cls(**d)


@dataclass(frozen=True)
class Payload(_Plain):
    """build_context's result: ``total_tokens`` == cl100k tokens of ``context`` <= ``budget``."""

    context: str
    total_tokens: int
    budget: int
    items: tuple[PayloadItem, ...]
    timings: Mapping[str, float]  # stage -> milliseconds
    format: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "total_tokens": self.total_tokens,
                "budget": self.budget, "items": [i.to_dict() for i in self.items],
                "timings": {k: round(v, 3) for k, v in self.timings.items()},
                "format": self.format}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Payload:
        d = _known(cls, data)
        d["items"] = tuple(PayloadItem.from_dict(i) for i in d.get("items") or ())
        return cls(**d)


# -- recall and sync ------------------------------------------------------------------

@dataclass(frozen=True)
class SyncResult(_Plain):
    """What a transcript sync did: files seen, unchanged, read again in part or whole."""

    files: int
    unchanged: int = 0
    appended: int = 0
    full: int = 0
    chunks: int = 0
    bad_lines: int = 0
    errors: tuple[FileIssue, ...] = ()
    embedded: int = 0
    seconds: float = 0.0
    folders: tuple[str, ...] = ()
    # Where it looked for transcripts (the default places too, when none is there).
    looked_in: tuple[str, ...] = ()
    # Folders in the sync list that no longer exist (skipped; ``forget_folder`` drops one).
    missing: tuple[str, ...] = ()
    # The job that fits recall's learned reader again after this sync (it runs in the
    # background: ``wait`` for it to know it is done); "" when no fit was needed.
    adapt_job: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SyncResult:
        d = _known(cls, data)
        d["errors"] = tuple(FileIssue.from_dict(e) for e in d.get("errors") or ())
        d["folders"] = tuple(str(f) for f in d.get("folders") or ())
        d["looked_in"] = tuple(str(f) for f in d.get("looked_in") or ())
        d["missing"] = tuple(str(f) for f in d.get("missing") or ())
        return cls(**d)


@dataclass(frozen=True)
class RecallHit(SearchHit):
    """A recall hit: a turn of a coding session, named by its best chunk (id, kind,
    place), with ``text`` (the request and the turn's chunks that answer best, within
    recall.turn_hit_tokens), ``line`` (session, date, branch and what came of the
    turn, in one line), ``excerpt`` (the lines that answer the query, within
    recall.hit_excerpt_tokens, or its share of the budget a query was asked with: then
    the whole text when it fits; lines an earlier hit shows are not shown again) and
    ``chunks`` (the ids of the chunks the text draws on, best first)."""

    line: str = ""
    excerpt: str = ""
    chunks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))  # a list off the wire


@dataclass(frozen=True)
class RecallResult(_Plain):
    """recall's result: ``hits`` for a query, or (``auto``) the digest in ``context``.

    ``total_tokens`` and ``budget``: the digest's tokens and budget; for a query asked
    with a budget, what its hits take (lines and excerpts) and that budget, and
    ``omitted``, how many hits it left out to stay within it.

    ``indexed`` and ``synced`` say what a sync asked for with the call did. The
    wire form carries only the parts present (a query's ``hits``, or the digest's
    fields), after ``indexed`` and ``synced``.
    """

    hits: tuple[RecallHit, ...] | None = None
    context: str | None = None  # the auto digest, None for a query
    total_tokens: int = 0
    budget: int = 0
    project: str | None = None
    branch: str | None = None
    sessions: int = 0
    failures: int = 0
    related: int = 0
    format: str = "context"
    output: str | None = None  # the digest as the agent's hook wants it (fmt claude-hook)
    indexed: SyncResult | None = None
    synced: SyncResult | None = None
    omitted: int = 0  # a query asked within a budget: the hits it left out

    _DIGEST: ClassVar[tuple[str, ...]] = ("context", "total_tokens", "budget", "project",
                                          "branch", "sessions", "failures", "related",
                                          "format")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("indexed", "synced"):
            part = getattr(self, name)
            if part is not None:
                out[name] = part.to_dict()
        if self.context is not None:
            out.update({name: getattr(self, name) for name in self._DIGEST})
            if self.output is not None:
                out["output"] = self.output
        if self.hits is not None:
            out["hits"] = [h.to_dict() for h in self.hits]
            if self.budget:  # a query asked within a budget: what its hits take of it
                out.update(total_tokens=self.total_tokens, budget=self.budget,
                           omitted=self.omitted)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallResult:
        d = _known(cls, data)
        if d.get("hits") is not None:
            d["hits"] = tuple(RecallHit.from_dict(h) for h in d["hits"])
        for name in ("indexed", "synced"):
            if isinstance(d.get(name), Mapping):
                d[name] = SyncResult.from_dict(d[name])
        return cls(**d)


# -- sources and health ---------------------------------------------------------------

@dataclass(frozen=True)
class SourceInfo(_Plain):
    """A stored source; ``stage`` (``SOURCE_STAGES``): "keyword" while its vectors are
    being made (found by keyword only), "ready" once both lanes have it."""

    id: int
    uri: str
    kind: str
    title: str
    fmt: str
    content_hash: str
    bytes: int
    created_at: float | None
    ingested_at: float
    n_chunks: int
    tokens: int
    project: str | None
    stage: str = "ready"


@dataclass(frozen=True)
class DeleteResult(_Plain):
    """What a delete removes: how many sources and paths, the source ids, and the job
    (kind "delete") that removes them, a step at a time."""

    deleted: int
    sources: tuple[int, ...] = ()
    job: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeleteResult:
        return cls(int(data["deleted"]), tuple(int(s) for s in data.get("sources") or ()),
                   str(data.get("job") or ""))


@dataclass(frozen=True)
class CompactResult(_Plain):
    """A compaction (kind "compact" job): the store's bytes before and after (after is
    0 until the job ends; follow ``job``)."""

    job: str
    bytes_before: int = 0
    bytes_after: int = 0


@dataclass(frozen=True)
class RepairResult(_Plain):
    """What a vector rebuild did (``ctx repair``): vectors written, chunks embedded again.

    ``cache_rows_dropped`` only for a full repair; ``set_aside``: the damaged
    parts moved away first (part -> where), only from ``repair_store``.
    """

    reason: str
    job: str
    vectors: int = 0
    embedded: int = 0
    seconds: float = 0.0
    cache_rows_dropped: int | None = None
    set_aside: Mapping[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items()
                if v is not None or k not in ("cache_rows_dropped", "set_aside")}


@dataclass(frozen=True)
class Alert(_Plain):
    """An active engine alert (``context_engine.vector_db.unavailable``, ...)."""

    name: str
    since: float
    count: int
    last: float
    detail: str = ""


@dataclass(frozen=True)
class Histogram(_Plain):
    """One duration histogram over the engine's recent window (milliseconds)."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float


@dataclass(frozen=True)
class MetricsSnapshot(_Plain):
    """Duration histograms by name, counters, gauges, active alerts."""

    histograms: Mapping[str, Histogram]
    counters: Mapping[str, int]
    gauges: Mapping[str, float]
    alerts: Mapping[str, Alert]
    time: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricsSnapshot:
        d = _known(cls, data)
        d["histograms"] = {k: Histogram.from_dict(v)
                           for k, v in (d.get("histograms") or {}).items()}
        d["alerts"] = {k: Alert.from_dict({"name": k, **v})
                       for k, v in (d.get("alerts") or {}).items()}
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["alerts"] = {k: {f: v for f, v in a.to_dict().items() if f != "name"}
                         for k, a in self.alerts.items()}
        return out


@dataclass(frozen=True)
class VectorMemory(_Plain):
    """What of the vector index is held in memory: ``kind`` exact | cache | none."""

    kind: str
    state: str
    vectors: int
    bytes: int


@dataclass(frozen=True)
class AdaptStatus(_Plain):
    """What recall's learned reader was fitted on (``recall.adapt``): the pairs and
    sessions of the store it learned from and when (``fitted``, None: not fitted yet,
    or dropped with a deleted session until the next sync fits it again)."""

    enabled: bool
    fitted: float | None = None
    pairs: int = 0
    sessions: int = 0
    terms: int = 0  # request words with a learned translation
    map: bool = False  # whether the query map beat the identity (else it is not used)
    seconds: float = 0.0  # the fit's time


@dataclass(frozen=True)
class Status(_Plain):
    """The engine's health at a glance (``ctx status``, the Health panel)."""

    data_dir: str
    sources: int
    chunks: int
    tokens: int
    bytes: int
    vectors: int | None  # None while the vector store is down
    vector_backend: str
    vector_store_ok: bool
    vectors_in_memory: VectorMemory
    model: str
    dim: int
    model_loaded: bool
    model_backend: str | None
    model_document_precision: str
    model_query_precision: str
    jobs_active: bool
    ingestion_paused: bool
    store_bytes: int
    alerts: Mapping[str, Alert]
    # Over the wire only: the serving process's counters (received, replied, ...).
    server: Mapping[str, Any] | None = None
    last_backup: float | None = None  # when the last backup of this store finished
    key_method: str = ""  # how the data key is kept: "keychain" or "passphrase"
    recovery_key: bool = False  # whether a recovery key can unlock the store
    # "<backend>: <why>", e.g. "torch: no ONNX export of MiniLM was found, ..." ("" if fake)
    model_backend_reason: str = ""
    # Sources stored and keyword-searchable whose vectors are not made yet, and their
    # chunks (the vector stage works through them in the background).
    sources_waiting: int = 0
    chunks_waiting: int = 0
    # What recall's learned reader was fitted on (None from an engine that does not say).
    adapt: AdaptStatus | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Status:
        d = _known(cls, data)
        d["vectors_in_memory"] = VectorMemory.from_dict(d["vectors_in_memory"])
        if d.get("adapt") is not None:
            d["adapt"] = AdaptStatus.from_dict(d["adapt"])
        d["alerts"] = {k: Alert.from_dict({"name": k, **v})
                       for k, v in (d.get("alerts") or {}).items()}
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["alerts"] = {k: {f: v for f, v in a.to_dict().items() if f != "name"}
                         for k, a in self.alerts.items()}
        if self.server is None:
            del out["server"]
        if self.adapt is None:
            del out["adapt"]
        return out


# -- keeping the data: backups, exports, key changes -----------------------------------

@dataclass(frozen=True)
class BackupResult(_Plain):
    """A backup file written (``ctx backup``) or checked (``ctx backup --verify``).

    ``store_id`` names the store (it lasts through key rotations), ``key_id`` the
    data key the backup is encrypted under; ``created`` is when it was taken.
    """

    path: str
    bytes: int
    created: float
    store_id: str
    key_id: str
    sources: int = 0
    chunks: int = 0
    vectors: int = 0
    seconds: float = 0.0
    verified: bool = False
    format: int = 1


@dataclass(frozen=True)
class RestoreResult(_Plain):
    """A backup restored into ``data_dir`` (``replaced``: where the store it replaced went)."""

    data_dir: str
    store_id: str
    key_id: str
    created: float
    sources: int
    chunks: int
    vectors: int
    bytes: int
    seconds: float
    replaced: str | None = None


@dataclass(frozen=True)
class ExportResult(_Plain):
    """Sources written out as plaintext (``ctx export``): where, how many, in what format."""

    path: str
    format: str
    sources: int
    chunks: int
    bytes: int
    files: int = 1


@dataclass(frozen=True)
class KeyChangeResult(_Plain):
    """A change of how the data key is kept (``what``: passphrase, use-keychain,
    use-passphrase, recovery, rotate). ``recovery_key`` holds a new recovery key, to be
    shown once; it is never sent over the wire (key changes run where the store is)."""

    what: str
    key_id: str
    seconds: float = 0.0
    old_key_id: str = ""
    method: str = ""
    has_recovery: bool = False
    recovery_key: str = field(default="", repr=False)


@dataclass(frozen=True)
class AuditEntry(_Plain):
    """One audit record: who asked what and when (ids and counts, never content)."""

    time: float
    method: str
    caller_pid: int | None
    ids: tuple[str, ...]
    counts: Mapping[str, int]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditEntry:
        d = _known(cls, data)
        d["ids"] = tuple(str(i) for i in d.get("ids") or ())
        return cls(**d)


# -- events ---------------------------------------------------------------------------

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
class BuildItem(_Plain):
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
