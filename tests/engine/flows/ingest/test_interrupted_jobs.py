"""Jobs an earlier run left unfinished: remembered in the vault, listed at the next open,
resumed (their inputs ingested again) or dismissed; a finished or user-cancelled job is not."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine.api import Event, JobChanged
from engine.errors import NotFound
from engine.facade import ContextEngine
from engine.flows.ingest.interrupted import META_KEY


def _folder(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(n):
        (folder / f"note{i:02d}.md").write_text(f"# Note {i}\n\n" + f"Tide table {i}. " * 200)
    return folder


def _stop_after(engine: ContextEngine, files: int) -> threading.Event:
    """Pause ingestion once a job has stored ``files`` files (on the writer thread)."""
    reached = threading.Event()

    def listen(event: Event) -> None:
        if isinstance(event, JobChanged) and event.job.files_done >= files \
                and not reached.is_set():
            engine.pause_ingestion()
            reached.set()
    engine.subscribe(listen)
    return reached


def test_a_job_stopped_by_quit_is_listed_at_the_next_open_and_resumes(
        data_dir: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, 12)
    engine = ContextEngine.open(data_dir)
    reached = _stop_after(engine, 3)
    job_id = engine.ingest(paths=[str(folder)])
    assert reached.wait(60)
    engine.cancel_all()  # what the app does when it quits with work running
    engine.resume_ingestion()
    stopped = engine.wait(job_id, timeout=60)
    assert stopped.state == "cancelled" and stopped.inputs == (str(folder),)
    assert engine.interrupted_jobs() == []  # listed by the next run, not this one
    engine.close()

    again = ContextEngine.open(data_dir)
    try:
        [listed] = again.interrupted_jobs()
        assert listed.id == job_id and listed.interrupted and listed.state == "cancelled"
        assert listed.inputs == (str(folder),) and listed.files_total == 12
        assert 3 <= listed.files_done < 12
        new_id = again.resume_interrupted(job_id)
        done = again.wait(new_id, timeout=120)
        assert done.state == "done" and done.files_done == 12
        assert done.files_unchanged == listed.files_done  # stored before: skipped
        assert len(again.sources()) == 12
        assert again.interrupted_jobs() == []
        with pytest.raises(NotFound):
            again.resume_interrupted(job_id)
    finally:
        again.close()
    third = ContextEngine.open(data_dir)
    try:
        assert third.interrupted_jobs() == []
    finally:
        third.close()


def test_finished_and_user_cancelled_jobs_are_not_listed(data_dir: Path, tmp_path: Path
                                                         ) -> None:
    folder = _folder(tmp_path, 6)
    engine = ContextEngine.open(data_dir)
    done = engine.wait(engine.ingest(paths=[str(folder / "note00.md")], wait=True), 60)
    assert done.state == "done"
    reached = _stop_after(engine, 1)
    job_id = engine.ingest(paths=[str(folder)])
    assert reached.wait(60)
    engine.cancel_job(job_id)  # the person's own cancel
    queued = engine.ingest(paths=[str(folder / "note05.md")])
    assert engine.cancel_job(queued).state == "cancelled"  # dropped while queued
    engine.resume_ingestion()
    assert engine.wait(job_id, timeout=60).state == "cancelled"
    engine.close()
    again = ContextEngine.open(data_dir)
    try:
        assert again.interrupted_jobs() == []
    finally:
        again.close()


def test_a_killed_run_leaves_its_queued_job_listed_and_dismiss_forgets_it(
        data_dir: Path, tmp_path: Path) -> None:
    """A crash leaves the record as written at queue time (inputs, no counts)."""
    folder = _folder(tmp_path, 2)
    engine = ContextEngine.open(data_dir)
    engine.pause_ingestion()
    job_id = engine.ingest(paths=[str(folder)])
    raw = engine.rt.vault.get_meta(META_KEY)
    assert raw is not None and job_id in raw
    engine.cancel_all()
    engine.resume_ingestion()
    engine.close()
    again = ContextEngine.open(data_dir)
    try:
        [listed] = again.interrupted_jobs()
        assert listed.id == job_id and listed.files_done == 0
        again.dismiss_interrupted(job_id)
        assert again.interrupted_jobs() == []
        with pytest.raises(NotFound):
            again.dismiss_interrupted(job_id)
    finally:
        again.close()


def test_a_sync_stopped_by_quit_says_so(data_dir: Path, tmp_path: Path) -> None:
    """A sync call waiting behind paused ingestion when the app quits (cancel_all) gets a
    clear error, not an internal one (it was an IndexError)."""
    from engine.errors import EngineClosed

    engine = ContextEngine.open(data_dir)
    try:
        engine.pause_ingestion()
        caught: list[BaseException] = []

        def call() -> None:
            try:
                engine.sync(paths=[str(tmp_path)])
            except BaseException as exc:  # noqa: BLE001 - what the caller gets
                caught.append(exc)
        thread = threading.Thread(target=call)
        thread.start()
        deadline = time.monotonic() + 10
        while not any(j.kind == "sync" for j in engine.jobs()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        engine.cancel_all()
        thread.join(30)
        assert len(caught) == 1 and isinstance(caught[0], EngineClosed)
    finally:
        engine.resume_ingestion()
        engine.close()


def test_resume_leaves_out_a_source_the_user_deleted_meanwhile(data_dir: Path,
                                                               tmp_path: Path) -> None:
    """Issue 33 (7): Resume re-added a source the user had deleted after the quit."""
    folder = _folder(tmp_path, 12)
    engine = ContextEngine.open(data_dir)
    reached = _stop_after(engine, 3)
    job_id = engine.ingest(paths=[str(folder)])
    assert reached.wait(60)
    engine.cancel_all()
    engine.resume_ingestion()
    engine.wait(job_id, timeout=60)
    engine.close()

    again = ContextEngine.open(data_dir)
    try:
        stored = again.sources()
        gone = stored[0]
        again.delete(gone.id)  # the user lets this one go before resuming
        new_id = again.resume_interrupted(job_id)
        done = again.wait(new_id, timeout=120)
        assert done.state == "done"
        uris = {s.uri for s in again.sources()}
        assert gone.uri not in uris and len(uris) == 11
    finally:
        again.close()


def test_a_job_stopped_in_its_vector_stage_is_not_listed(data_dir: Path,
                                                        tmp_path: Path) -> None:
    """Issue 33 (7): a job stopped while only vectors were left said "Interrupted...
    Resume reads the rest" when nothing was left to read."""
    folder = _folder(tmp_path, 4)
    engine = ContextEngine.open(data_dir)
    reached = threading.Event()

    def listen(event: Event) -> None:
        if isinstance(event, JobChanged) and event.job.stage == "vectors" \
                and not reached.is_set():
            engine.pause_ingestion()  # hold it in its vector stage
            reached.set()
    engine.subscribe(listen)
    job_id = engine.ingest(paths=[str(folder)])
    assert reached.wait(60)
    engine.cancel_all()
    engine.resume_ingestion()
    assert engine.wait(job_id, timeout=60).state == "cancelled"
    engine.close()
    again = ContextEngine.open(data_dir)
    try:
        assert again.interrupted_jobs() == []  # every file was stored: nothing to resume
        assert len(again.sources()) == 4
    finally:
        again.close()
