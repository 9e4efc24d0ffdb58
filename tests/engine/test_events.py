"""The engine's one subscription: jobs, sources, builds and alerts, announced by the engine."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from engine.api import (
    AlertCleared,
    AlertRaised,
    BuildDone,
    Event,
    JobChanged,
    SourcesChanged,
)
from engine.calls import caller
from engine.facade import ContextEngine
from engine.metrics import ALERT_VECTOR_DOWN, Metrics


def _docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "otters.md").write_text("# Otters\n\nOtters hold hands while they sleep.\n")
    (folder / "kelp.md").write_text("# Kelp\n\nKelp forests shelter the otters.\n")
    return folder


def test_jobs_sources_and_builds_are_announced_in_order(engine: ContextEngine,
                                                        tmp_path: Path) -> None:
    events: list[Event] = []
    changed = threading.Event()
    engine.subscribe(events.append)
    engine.subscribe(lambda e: changed.set() if isinstance(e, SourcesChanged)
                     and e.reason == "vectors" else None)
    job = engine.wait(engine.ingest(paths=[str(_docs(tmp_path))]), timeout=60)
    assert changed.wait(30)  # announced on the writer thread once the job has ended
    jobs = [e.job for e in events if isinstance(e, JobChanged)]
    assert jobs[0].state == "queued" and jobs[-1] == job and job.state == "done"
    stored = [e for e in events if isinstance(e, SourcesChanged)]
    # once stored (keyword-searchable), once their vectors are in (after the job ended)
    assert [(e.reason, set(e.source_ids)) for e in stored] == [
        ("ingest", set(job.sources)), ("vectors", set(job.sources))]
    keyword = next(e.job for e in events if isinstance(e, JobChanged)
                   and e.job.stage == "vectors")
    assert events.index(stored[0]) > events.index(JobChanged(keyword))
    assert events.index(stored[1]) > events.index(JobChanged(job))

    payload = engine.build_context("why do otters hold hands?", budget=200)
    with caller("ipc", pid=os.getpid(), request="r" * 32):
        engine.build_context("kelp forests", budget=150)
    builds = [e for e in events if isinstance(e, BuildDone)]
    assert [(b.origin, b.budget) for b in builds] == [("local", 200), ("ipc", 150)]
    assert builds[0].total_tokens == payload.total_tokens
    assert [i.source for i in builds[0].items] == [i.source for i in payload.items]
    assert "otters hold" not in repr(builds).lower()  # never the query or the text

    gone = engine.delete(str(tmp_path / "docs" / "kelp.md"))
    assert events[-1] == SourcesChanged("delete", gone.sources)


def test_a_failing_listener_never_breaks_the_engine(engine: ContextEngine,
                                                    tmp_path: Path) -> None:
    heard: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError("a listener bug")
    engine.subscribe(broken)
    stop = engine.subscribe(heard.append)
    assert engine.wait(engine.ingest(text="a short note", title="n"), timeout=30).state == "done"
    assert engine.build_context("note", budget=100).total_tokens > 0
    assert any(isinstance(e, BuildDone) for e in heard)
    stop()
    count = len(heard)
    engine.build_context("note", budget=100)
    assert len(heard) == count  # unsubscribed


def test_alerts_are_announced_when_raised_and_when_cleared() -> None:
    events: list[Event] = []
    metrics = Metrics(on_change=events.append)
    metrics.alert(ALERT_VECTOR_DOWN, True, "connection refused")
    metrics.alert(ALERT_VECTOR_DOWN, True, "connection refused")  # still active: no news
    metrics.alert("context_engine.other", False)  # was not active: no news
    metrics.alert(ALERT_VECTOR_DOWN, False)
    assert [type(e) for e in events] == [AlertRaised, AlertCleared]
    raised = events[0]
    assert isinstance(raised, AlertRaised) and raised.alert.name == ALERT_VECTOR_DOWN
    assert raised.alert.count == 1 and raised.alert.detail == "connection refused"
    assert events[1] == AlertCleared(ALERT_VECTOR_DOWN)
