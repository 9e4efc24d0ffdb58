"""Status values as a person reads them (shared by `ctx status` and the app's Health panel)."""

from __future__ import annotations

import time

from engine import Histogram, JobSnapshot, Status, VectorMemory

# What a job's stage does, in words (engine.JobProgress.stage); a one-stage job ("work")
# says its kind.
STAGE_WORDS = {"text": "storing text", "vectors": "making vectors for search by meaning",
               "queued": "waiting to start", "done": "done", "failed": "failed",
               "cancelled": "cancelled"}
KIND_WORDS = {"backup": "backing up", "verify_backup": "checking a backup",
              "repair": "rebuilding vectors", "delete": "deleting", "sync": "syncing",
              "vectors": "making vectors", "export": "exporting", "compact": "compacting",
              "rotate": "changing the key"}


def duration_text(seconds: float) -> str:
    """"40 s", "12 min", "1.5 h"."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _amount(n: int, unit: str) -> str:
    if unit != "bytes":
        return f"{n:,}"
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} KB"


def progress_text(job: JobSnapshot, *, time_left: bool = True) -> str:
    """A job's progress as the engine describes it (``job.progress``), in one line; the
    same words in ``ctx status``, the app's tray, its job card and its quit dialog:
    "making vectors for search by meaning (step 2 of 2): 1,204 of 7,000 chunks (17%),
    12 min left"."""
    p = job.progress
    if p.stage == "work":
        what = KIND_WORDS.get(job.kind, job.kind.replace("_", " "))
    else:
        what = STAGE_WORDS.get(p.stage, p.stage)
    if p.stage in ("queued", "done", "failed", "cancelled"):
        return what
    if p.steps > 1:
        what += f" (step {p.step} of {p.steps})"
    if p.total:
        unit = "" if p.unit == "bytes" else " " + (p.unit if p.total != 1 else p.unit[:-1])
        what += f": {_amount(p.done, p.unit)} of {_amount(p.total, p.unit)}{unit}"
    if p.percent is not None:
        what += f" ({p.percent}%)"
    if p.seconds_left is not None and time_left:  # not while paused
        what += f", {duration_text(p.seconds_left)} left"
    return what


def waiting_line(status: Status) -> str:
    """Sources stored and keyword-searchable whose vectors are still being made."""
    n, c = status.sources_waiting, status.chunks_waiting
    return (f"{n} source{'s' if n != 1 else ''} ({c} chunk{'s' if c != 1 else ''}) wait for "
            "their vectors: searchable by keyword now, by meaning once made")


def adapt_line(status: Status) -> str:
    """What recall's learned reader was fitted on, in one line (``recall.adapt``)."""
    a = status.adapt
    if a is None:
        return "not reported by this engine"
    if not a.enabled:
        return "off (recall.adapt = false)"
    if a.fitted is None:
        return "on, nothing learned yet: the next sync learns from your sessions"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(a.fitted))
    use = ("meaning search tuned to your words" if a.map
           else "meaning search left as is (tuning did not help on your sessions)")
    return (f"on: learned {when} from {a.pairs} request/answer pairs in {a.sessions} "
            f"sessions ({a.seconds:.1f} s); {use}; {a.terms} of your words linked to "
            "related words for keyword search")


def memory_line(mem: VectorMemory) -> str:
    """``status``'s ``vectors_in_memory`` as one line: what the queries read vectors from."""
    held = mem.bytes
    size = f"{mem.vectors} vectors, " + (
        f"{held / 2**20:.0f} MB" if held >= 2**20 else f"{held / 2**10:.0f} KB")
    state = mem.state
    if state == "empty":
        return "not loaded yet (a served engine loads it at start; queries read the index)"
    if mem.kind == "exact":
        return f"exact index, {size}"
    if mem.kind == "prefilter":  # the memory backend past store.exact_search_max
        return f"index with a prefilter, {size}"
    if mem.kind == "cache":
        return {"ready": f"vector cache, {size}",
                "loading": "vector cache loading (queries read the index meanwhile)",
                "off": "none: the store is over store.vector_cache_mb, vectors are read "
                       "from the index"}.get(state, state)
    return "none (vectors are read from the index)"


def metric_unit(name: str) -> str:
    """The unit a metric's name ends with: ``%`` for ``*_percent``, ``ms`` for
    ``*_ms``, else "" (a count)."""
    if name.endswith("_percent"):
        return "%"
    if name.endswith("_ms"):
        return " ms"
    return ""


def histogram_line(name: str, h: Histogram) -> str:
    """One histogram as ``ctx status`` prints it, in the unit its name says:
    ``...duration_ms: p50 6.5 ms, p95 7.3 ms (520 calls)``,
    ``...token_accuracy_percent: p50 100.0%, p95 100.0% (12 builds)``."""
    unit = metric_unit(name)
    what = "builds" if "packing." in name else "calls"
    return f"{name}: p50 {h.p50:.1f}{unit}, p95 {h.p95:.1f}{unit} ({h.count} {what})"
