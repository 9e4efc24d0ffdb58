"""JobRunner: submission order, serial listener delivery, pause/resume, failures."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from engine.api.jobs import JobSnapshot
from engine.errors import IngestFailed, NotFound
from engine.flows.jobs import Job, JobRunner


def _steps(n: int, pause_s: float = 0.0):
    def work(job: Job, progress) -> None:
        job.files_total = n
        for _ in range(n):
            job.files_done += 1
            progress()
            if pause_s:
                time.sleep(pause_s)
    return work


@pytest.fixture
def runner():
    r = JobRunner()
    yield r
    r.stop()


def test_jobs_run_in_submission_order(runner: JobRunner) -> None:
    started: list[str] = []

    def work(job: Job, progress) -> None:
        started.append(job.id)
        time.sleep(0.01)

    ids = [runner.submit("ingest", work).id for _ in range(5)]
    for jid in ids:
        assert runner.wait(jid, timeout=10).state == "done"
    assert started == ids


def test_listeners_are_called_one_at_a_time(runner: JobRunner) -> None:
    active = 0
    overlap = 0
    guard = threading.Lock()

    def listener(snap: JobSnapshot) -> None:
        nonlocal active, overlap
        with guard:
            active += 1
            overlap = max(overlap, active)
        time.sleep(0.002)
        with guard:
            active -= 1

    runner.subscribe(listener)
    submitters = [threading.Thread(target=lambda: [runner.submit("ingest", _steps(20))
                                                   for _ in range(5)]) for _ in range(3)]
    for t in submitters:
        t.start()
    for t in submitters:
        t.join()
    for snap in runner.list():
        assert runner.wait(snap.id, timeout=30).state == "done"
    assert overlap == 1


def test_each_job_reports_progress_in_order(runner: JobRunner) -> None:
    seen: dict[str, list[int]] = {}
    runner.subscribe(lambda s: seen.setdefault(s.id, []).append(s.files_done))
    jobs = [runner.submit("ingest", _steps(10)).id for _ in range(3)]
    for jid in jobs:
        runner.wait(jid, timeout=10)
    for jid in jobs:
        assert seen[jid] == sorted(seen[jid]) and seen[jid][-1] == 10


def test_unsubscribe_and_broken_listener(runner: JobRunner) -> None:
    calls: list[int] = []

    def broken(snap: JobSnapshot) -> None:
        raise OSError("listener pipe closed")

    runner.subscribe(broken)
    stop = runner.subscribe(lambda s: calls.append(s.files_done))
    assert runner.wait(runner.submit("ingest", _steps(3)).id, timeout=10).state == "done"
    n = len(calls)
    assert n > 0
    stop()
    assert runner.wait(runner.submit("ingest", _steps(3)).id, timeout=10).state == "done"
    assert len(calls) == n


def test_pause_holds_progress_until_resume(runner: JobRunner) -> None:
    runner.pause()
    assert runner.paused
    jid = runner.submit("ingest", _steps(5)).id
    time.sleep(0.2)
    assert runner.get(jid).files_done == 0
    runner.resume()
    assert runner.wait(jid, timeout=10).files_done == 5


def test_failures_carry_a_code_and_the_runner_goes_on(runner: JobRunner) -> None:
    def bad_format(job: Job, progress) -> None:
        raise IngestFailed("disk full")

    def crash(job: Job, progress) -> None:
        raise RuntimeError("secret words from a document")

    a = runner.wait(runner.submit("ingest", bad_format).id, timeout=10)
    b = runner.wait(runner.submit("ingest", crash).id, timeout=10)
    c = runner.wait(runner.submit("ingest", _steps(2)).id, timeout=10)
    assert a.state == "failed" and a.error is not None and a.error.name == IngestFailed.name
    assert b.state == "failed" and b.error is not None
    assert b.error.to_dict() == {"code": 2008, "name": "internal_error",
                                 "message": "job failed with RuntimeError",
                                 "details": {"type": "RuntimeError"}}
    assert c.state == "done"
    with pytest.raises(NotFound):
        runner.get("nope")


def test_cancel_drops_a_queued_job(runner: JobRunner) -> None:
    ran: list[str] = []
    runner.pause()
    first = runner.submit("ingest", lambda job, progress: ran.append("first"))
    second = runner.submit("ingest", lambda job, progress: ran.append("second"))
    snap = runner.cancel(first.id)
    assert snap.state == "cancelled" and snap.finished is not None
    runner.resume()
    assert runner.wait(second.id, timeout=10).state == "done"
    assert runner.get(first.id).state == "cancelled"
    assert ran == ["second"]


def test_cancel_stops_a_running_job_at_its_next_safe_point(runner: JobRunner) -> None:
    entered, gate = threading.Event(), threading.Event()
    done: list[int] = []

    def work(job: Job, progress) -> None:
        for i in range(100):
            if i == 3:
                entered.set()
                gate.wait(10)
            done.append(i)
            progress()  # a safe point

    jid = runner.submit("ingest", work).id
    assert entered.wait(10)
    assert runner.cancel(jid).state == "running"  # it stops at its next safe point
    gate.set()
    snap = runner.wait(jid, timeout=10)
    assert snap.state == "cancelled" and snap.error is None
    assert done == [0, 1, 2, 3]


def test_cancel_reaches_a_paused_job_and_cancel_all(runner: JobRunner) -> None:
    started = threading.Event()

    def work(job: Job, progress) -> None:
        started.set()
        while True:
            progress()

    jid = runner.submit("ingest", work).id
    queued = runner.submit("ingest", _steps(2)).id
    assert started.wait(10)
    runner.pause()  # the running job now waits in progress()
    snaps = runner.cancel_all()
    assert {s.id for s in snaps} == {jid, queued}
    assert runner.wait(jid, timeout=10).state == "cancelled"
    assert runner.get(queued).state == "cancelled"
    runner.resume()
    assert runner.wait(runner.submit("ingest", _steps(1)).id, timeout=10).state == "done"


def test_cancel_a_finished_or_unknown_job(runner: JobRunner) -> None:
    jid = runner.submit("ingest", _steps(1)).id
    assert runner.wait(jid, timeout=10).state == "done"
    assert runner.cancel(jid).state == "done"
    with pytest.raises(NotFound):
        runner.cancel("nope")


class _Fatal(BaseException):
    """Not an Exception: a job body's ``except Exception`` does not stop it (as a
    SystemExit or a C extension's abort would not be)."""


def test_a_writer_thread_that_dies_fails_every_waiting_job() -> None:
    """Issue 32: when the writer thread died, ``wait()`` hung with no progress."""
    died: list[Any] = []
    r = JobRunner(on_death=died.append)
    try:
        gate = threading.Event()

        def fatal(job: Job, progress) -> None:
            gate.wait(10)
            raise _Fatal()

        first = r.submit("paths", fatal)
        queued = r.submit("paths", _steps(1))
        gate.set()
        for jid in (first.id, queued.id):
            snap = r.wait(jid, timeout=30)
            assert snap.state == "failed" and snap.error is not None
            assert snap.error.name == "internal_error"
        assert len(died) == 1 and died[0].name == "internal_error"
        later = r.wait(r.submit("text", _steps(1)).id, timeout=5)  # never a hang either
        assert later.state == "failed" and later.error == died[0]
    finally:
        r.stop(timeout=1)


def test_a_stage_that_fails_to_adopt_fails_the_job_not_the_writer() -> None:
    class Broken:
        def begin(self, job: Job) -> None:
            pass

        def staged(self, kind: str) -> bool:
            return True

        def adopt(self, job: Job, others: list[Job]) -> list[int]:
            raise IngestFailed("the vault was replaced")

        def step(self, jobs: list[Job]) -> bool:
            return True

    r = JobRunner(stage=Broken())
    try:
        first = r.wait(r.submit("paths", _steps(1)).id, timeout=10)
        assert first.state == "failed" and first.error is not None
        assert first.error.name == "ingest_failed"
        assert r.wait(r.submit("paths", _steps(1)).id, timeout=10).state == "failed"
        assert r.dead is None  # the writer still runs
    finally:
        r.stop(timeout=1)


def test_pause_and_resume_are_announced_for_a_job_between_steps(runner: JobRunner) -> None:
    """A job busy inside a step says "paused" as soon as ingestion is paused, not at its
    next step (the tray and the card showed it running until then)."""
    inside, release = threading.Event(), threading.Event()

    def work(job: Job, progress) -> None:
        inside.set()
        release.wait(10)  # one long step: no progress call while paused

    seen: list[Any] = []
    runner.subscribe(seen.append)
    jid = runner.submit("ingest", work).id
    assert inside.wait(10)
    runner.pause()
    assert any(s.id == jid and s.waiting == "paused" for s in seen)
    seen.clear()
    runner.resume()
    assert any(s.id == jid and s.state == "running" and s.waiting == "" for s in seen)
    release.set()
    assert runner.wait(jid, timeout=10).state == "done"
