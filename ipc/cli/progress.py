"""Ingestion progress on stderr, for `ctx ingest` and `ctx recall --index`.

A job that runs longer than ``AFTER_S`` seconds is never silent: on a terminal
one line is redrawn; otherwise (a log, an agent) a line is printed every
``every_s`` seconds. The line says what the job waits for ("queued behind job
X: ...", "paused", the model loading) or what it does: storing text (files,
bytes, rate, time left) and then making vectors ("searchable by keyword now;
meaning-search 40%"), which moves chunk by chunk, so a large file moves too.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from engine import EngineAPI, JobSnapshot
from ipc.cli.output import fmt_bytes, fmt_duration

AFTER_S = 2.0  # a job shorter than this prints nothing
# Jobs that are not ingests, and what their progress line calls them.
LONG_OPS = {"delete": "deleting", "compact": "compacting", "rotate": "rotating the key"}
EVERY_S = 5.0  # seconds between lines in a log
T = TypeVar("T")


class _Rate:
    """A rate over the last minute of samples, and the time left at it."""

    def __init__(self) -> None:
        self._samples: list[tuple[float, float]] = []

    def add(self, now: float, value: float) -> float | None:
        self._samples = [s for s in self._samples if now - s[0] <= 60.0] + [(now, value)]
        t0, v0 = self._samples[0]
        return (value - v0) / (now - t0) if now - t0 >= 1.0 and value > v0 else None

    def reset(self) -> None:
        self._samples = []


class StatusLine:
    """One line of progress on ``stream``: redrawn in place on a terminal, a new line
    each time otherwise; ``close`` ends a line drawn in place."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self._drawn = False

    def draw(self, text: str, width: int) -> None:
        """``text`` as the line (padded to ``width`` on a terminal)."""
        self.stream.write(("\r" + text.ljust(width)) if self.tty else text + "\n")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()


class JobProgress(StatusLine):
    """Draws one job's progress; ``describe(job_id)`` tells what a job is (for the
    one a queued job waits behind)."""

    def __init__(self, stream: TextIO = sys.stderr, every_s: float = EVERY_S,
                 after_s: float = AFTER_S,
                 describe: Callable[[str], JobSnapshot | None] | None = None) -> None:
        super().__init__(stream)
        self.every_s = 0.2 if self.tty else every_s
        self.after_s = after_s
        self.describe = describe
        self._t0 = time.monotonic()
        self._last = 0.0
        self._stage = ""
        self._rate = _Rate()

    def line(self, snap: JobSnapshot, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        if snap.kind in LONG_OPS:
            return self._long_op(snap, now)
        what = "indexing" if snap.kind == "sync" else "ingesting"
        if snap.state == "queued":
            if snap.waiting == "paused":
                return f"{what}: queued; ingestion is paused"
            ahead = self.describe(snap.behind) if self.describe and snap.behind else None
            about = f": {_brief(ahead)}" if ahead is not None else ""
            return f"{what}: queued behind job {snap.behind[:8]}{about}"
        if snap.waiting == "paused":
            return f"{what}: paused ({_done(snap)})"
        if snap.stage != self._stage:
            self._stage = snap.stage
            self._rate.reset()
        if snap.stage == "vectors":
            return self._vectors(snap, now)
        return self._storing(snap, now, what)

    def _storing(self, snap: JobSnapshot, now: float, what: str) -> str:
        total = snap.bytes_total
        rate = self._rate.add(now, snap.bytes if total else snap.files_done)
        parts = [f"{snap.files_done}/{snap.files_total} files"]
        if total:
            parts.append(f"{fmt_bytes(snap.bytes)}/{fmt_bytes(total)}")
        parts.append(f"{snap.chunks} chunks")
        if rate:
            left = ((total - snap.bytes) if total else (snap.files_total - snap.files_done)) / rate
            parts.append(f"{fmt_bytes(rate)}/s" if total else f"{rate:.1f} files/s")
            parts.append(f"{fmt_duration(left)} left")
        current = f"  {snap.current[-50:]}" if snap.current else ""
        head = "storing" if snap.stage == "keyword" else what
        return f"{head}: {', '.join(parts)}{current}"

    def _long_op(self, snap: JobSnapshot, now: float) -> str:
        """A delete, a compaction: sources done of all, chunks removed, time left."""
        what = LONG_OPS[snap.kind]
        if snap.state == "queued":
            ahead = self.describe(snap.behind) if self.describe and snap.behind else None
            about = f": {_brief(ahead)}" if ahead is not None else ""
            return f"{what}: queued behind job {snap.behind[:8]}{about}"
        if snap.final:
            return f"{what}: {snap.state} ({long_op_done(snap)})"
        rate = self._rate.add(now, snap.files_done)
        tail = ""
        if rate and snap.files_total:
            tail = f", {fmt_duration((snap.files_total - snap.files_done) / rate)} left"
        return f"{what}: {long_op_done(snap)}{tail}"

    def _vectors(self, snap: JobSnapshot, now: float) -> str:
        head = "searchable by keyword now; meaning-search"
        if snap.waiting == "model":
            return f"{head} waits for the model to load"
        total = max(1, snap.to_embed)
        pct = int(100 * min(snap.embedded, total) / total)
        rate = self._rate.add(now, snap.embedded)
        tail = ""
        if rate:
            tail = (f", {rate:.0f} chunks/s, "
                    f"{fmt_duration((snap.to_embed - snap.embedded) / rate)} left")
        return f"{head} {pct}% ({snap.embedded}/{snap.to_embed} chunks{tail})"

    def update(self, snap: JobSnapshot, force: bool = False) -> None:
        now = time.monotonic()
        if now - self._t0 < self.after_s and not (force and self._drawn):
            return
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        text = self.line(snap, now)
        self.draw(text[:150] if self.tty else text, min(150, max(100, len(text))))


def long_op_done(snap: JobSnapshot) -> str:
    """How far a delete, a compaction or a key rotation got, in words."""
    if snap.kind == "rotate" and snap.current == "vault" and snap.bytes_total:
        return f"the vault, {fmt_bytes(snap.bytes)} of {fmt_bytes(snap.bytes_total)}"
    if snap.kind in ("compact", "rotate"):
        return f"the {snap.current}" if snap.current else "starting"
    tail = f", compacting the {snap.current}" if snap.current else ""
    return (f"{snap.files_done}/{snap.files_total} sources, "
            f"{snap.chunks:,} chunks removed{tail}")


def _done(snap: JobSnapshot) -> str:
    if snap.stage == "vectors":
        return f"{snap.embedded}/{snap.to_embed} chunks embedded"
    return f"{snap.files_done}/{snap.files_total} files"


def _brief(snap: JobSnapshot) -> str:
    """What a job is doing, in a few words (for the one another waits behind)."""
    kind = {"paths": "ingest", "text": "ingest of a text", "sync": "transcript sync",
            "vectors": "vectors left from before",
            "adapt": "recall learning from your sessions"}.get(snap.kind, snap.kind)
    if snap.state == "queued":
        return f"{kind}, itself queued"
    if snap.kind in LONG_OPS:
        return f"{kind}, {long_op_done(snap)}"
    return f"{kind}, {_done(snap)}"


def summary(snap: JobSnapshot) -> list[str]:
    """What an ended ingest job did, for the terminal: the counts line first, then what
    it was given that was stored already, what it skipped (by reason) and why a folder
    gave nothing. Failures are listed one by one by the caller."""
    ingested = snap.files_done - snap.files_skipped - snap.files_unchanged
    failed = len(snap.errors)
    lines = [(f"{ingested} ingested, {snap.files_unchanged} unchanged, "
              f"{snap.files_skipped - failed} skipped, {failed} failed, {snap.chunks} chunks")]
    for ref in snap.existing:
        lines.append(f"  already stored as source {ref.id} \u201c{ref.title}\u201d")
    reasons: dict[str, int] = {}
    for f in snap.skipped:
        key = f"{f.reason} ({f.detail})" if f.detail else f.reason
        reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        lines.append("  skipped: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())))
    if snap.kind == "paths" and snap.files_total == 0 and not snap.ignored and not snap.errors:
        lines.append("  nothing to ingest: the folder is empty (no files in it or below it)")
    if snap.files_total == 0 and snap.ignored:
        by = ", ".join(f"{n} by {_IGNORED.get(k, k)}" for k, n in sorted(snap.ignored.items()))
        lines.append(f"  nothing to ingest: every entry was left out ({by}); "
                     "ingest.respect_gitignore = false or a .ctxignore with !patterns lets "
                     "them in")
    return lines


_IGNORED = {"gitignore": ".gitignore", "ctxignore": ".ctxignore",
            "excluded": "ingest.excludes"}


def job_or_none(backend: EngineAPI, job_id: str) -> JobSnapshot | None:
    """A job's snapshot for a progress line's description, or None when it is gone."""
    try:
        return backend.job(job_id)
    except Exception:  # noqa: BLE001 - a description only: the job may be gone
        return None


def while_watching(backend: EngineAPI, kind: str, call: Callable[[], T],
                   draw: Callable[[JobSnapshot], None]) -> T:
    """Run ``call()`` on a thread while ``draw`` is given, every 0.2 s, the latest running
    job of ``kind`` begun since (polled on a connection of its own when the engine is
    remote: the call holds the other); what ``call`` raised is raised here."""
    from ipc.remote import RemoteEngine

    holder: dict[str, Any] = {}

    def work() -> None:
        try:
            holder["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            holder["error"] = exc

    since = time.time() - 1.0
    # The copied context carries the caller ("cli") to the engine call on that thread.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(work,),
                              name=f"ctx-{kind}", daemon=True)
    thread.start()
    watcher: EngineAPI = backend
    if isinstance(backend, RemoteEngine):
        watcher = RemoteEngine(backend.info, timeout=5.0)
    try:
        while thread.is_alive():
            thread.join(0.2)
            try:
                jobs = [j for j in watcher.jobs() if j.kind == kind
                        and j.state == "running" and j.created >= since]
            except Exception:  # noqa: BLE001 - progress is best effort; the result decides
                jobs = []
            if jobs:
                draw(jobs[-1])
    finally:
        if watcher is not backend:
            watcher.close()
    if "error" in holder:
        raise holder["error"]
    result: T = holder["result"]
    return result
