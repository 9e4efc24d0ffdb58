"""A job as it stands (``JobSnapshot``) and how far it is (``JobProgress``, described
once here by ``describe_progress`` for every front end)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.api.base import ErrorInfo, FileIssue, Plain, SourceRef, known

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
JOB_STATES: tuple[str, ...] = ("queued", "running", "done", "failed", "cancelled")
FINAL_JOB_STATES: tuple[str, ...] = ("done", "failed", "cancelled")
# What a running job does now: "keyword" (storing text, keyword-searchable as each
# file is stored), then "vectors" (embedding what it stored); "" for jobs without stages.
JOB_STAGES: tuple[str, ...] = ("", "keyword", "vectors")


@dataclass(frozen=True)
class JobProgress(Plain):
    """How far a job is, computed by the engine from what it knows of the job's stages:
    the one description the app's tray, job card and quit dialog and ``ctx status`` read
    (``describe_progress`` below).

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
class JobSnapshot(Plain):
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
        d = known(cls, data)
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
    began: float | None = getattr(job, "stage_started", None) or job.started
    if not began or remaining <= 0 or moved < RATE_AFTER_UNITS:
        return None
    elapsed = (now or time.time()) - began
    if elapsed < RATE_AFTER_S:
        return None
    return remaining * elapsed / moved

