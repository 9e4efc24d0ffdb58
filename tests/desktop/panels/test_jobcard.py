"""Job cards say what is true (issue 22: 7): titled by what they ingest, no bar that reads
as full for a queued job, paused says paused, the model-loading wait explained, nothing
new said as such; and plurals right."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from desktop.panels.jobcard import JobCard, state_line, summary
from engine import FileIssue, JobSnapshot

pytestmark = pytest.mark.gui


def snap(**fields: Any) -> JobSnapshot:
    base = JobSnapshot(id="j1", kind="paths", state="running", created=time.time() - 5,
                       started=time.time() - 5, inputs=("/home/me/Documents/field-notes",))
    return dataclasses.replace(base, **fields)


@pytest.fixture
def card(qtbot: Any) -> JobCard:
    widget = JobCard(snap(state="queued", started=None), lambda _id: None)
    qtbot.addWidget(widget)
    widget.resize(700, 120)
    return widget


def test_titled_by_what_it_ingests(card: JobCard) -> None:
    assert card.title.text() == "field-notes"
    card.update_job(snap(inputs=("/a/report.pdf", "/a/b.md", "/a/c.md")))
    assert card.title.text() == "report.pdf and 2 others"
    card.update_job(snap(kind="sync", inputs=()))
    assert card.title.text() == "Coding sessions"


def test_a_queued_job_has_no_full_bar(card: JobCard) -> None:
    assert card.state.text() == "Queued" and card.bar.isHidden()
    assert card.detail.text() == "Waiting to start"  # no job ahead of it
    card.update_job(dataclasses.replace(card.snapshot, waiting="job", behind="j0"))
    assert card.detail.text() == "Waiting for the job ahead of it"


def test_paused_says_paused(card: JobCard) -> None:
    running = snap(files_total=16, files_done=6, bytes=12_000, chunks=40)
    card.update_job(running, paused=True)
    assert card.state.text() == "Paused"
    assert card.detail.text().endswith("· paused") and "left" not in card.detail.text()
    assert card.bar.maximum() == 16 and card.bar.value() == 6  # still, not busy
    card.update_job(running, paused=False)
    assert card.state.text() == "Running" and "left" in card.detail.text()


def test_the_model_loading_wait_is_explained(card: JobCard) -> None:
    card.update_job(snap(files_total=4), model_loading=True)
    assert card.detail.text().startswith("Waiting for the embedding model to load")
    assert "B/s" not in card.detail.text()
    card.update_job(snap(files_total=4, started=time.time()), model_loading=False)
    assert "0 B/s" not in card.detail.text() and "estimating" not in card.detail.text()


def test_nothing_new_is_said_so(card: JobCard) -> None:
    card.update_job(snap(kind="sync", inputs=(), state="done", files_total=2, files_done=2,
                         files_unchanged=2, finished=time.time()))
    assert card.state.text() == "Done"
    assert card.detail.text() == "Nothing new to index: no transcript changed since the last sync"
    card.update_job(snap(kind="sync", inputs=(), state="done", finished=time.time()))
    assert card.detail.text() == "No coding sessions were found"  # issue 33 (17)
    assert card.bar.isHidden()
    card.update_job(snap(state="done", files_total=3, files_done=3, files_unchanged=3,
                         finished=time.time()))
    assert card.detail.text() == "Nothing new: 3 files unchanged"


def test_skips_are_a_report_and_failures_a_warning(card: JobCard) -> None:
    """A file skipped on purpose (binary, empty...) is no alarm; one that could not be
    read is. Before, both read "Done, N files skipped" in the warning colour."""
    skip = FileIssue(path="/d/a.png", reason="unsupported")
    skipped = snap(state="done", files_total=3, files_done=2, files_skipped=1,
                   skipped=(skip,), finished=time.time())
    assert state_line(skipped) == ("Done, 1 file skipped", "ok")
    bad = FileIssue(path="/d/b.json", reason="malformed")
    failed = snap(state="done", files_total=3, files_done=1, files_skipped=2,
                  skipped=(skip,), errors=(bad,), finished=time.time())
    assert state_line(failed) == ("Done, 1 file failed, 1 skipped", "warn")
    card.update_job(failed)
    assert card.state.text() == "Done, 1 file failed, 1 skipped"
    assert "1 failed · 1 skipped" in card.detail.text()


def test_plurals() -> None:
    one = summary(snap(state="done", files_total=1, files_done=1, chunks=1, bytes=10,
                       finished=time.time()))
    assert one.startswith("1 of 1 file · 1 chunk ·")
    many = summary(snap(state="done", files_total=2, files_done=2, chunks=5, bytes=10,
                        finished=time.time()))
    assert many.startswith("2 of 2 files · 5 chunks ·")


def test_staged_progress_when_the_engine_reports_it(card: JobCard) -> None:
    if "to_embed" not in JobSnapshot.__dataclass_fields__:
        pytest.skip("this engine does not report ingestion stages")
    staged = dataclasses.replace(snap(files_total=10, files_done=10, chunks=50, bytes=9000),
                                 stage="vectors", to_embed=50, embedded=20)
    card.update_job(staged)
    assert card.detail.text().startswith(
        "Every file stored, searchable by keyword now · making vectors for search by "
        "meaning (step 2 of 2): 20 of 50 chunks (40%)")
    assert card.bar.text().startswith("Vectors: 20 of 50 chunks")  # not a full file bar
    assert card.bar.text()[:1].isupper()  # a label starts upper-case (issue 33: 9)
