"""`ctx ingest` progress and summary (issue 21): a live line on a terminal, a line every
few seconds in a log, queued-behind notices, the vector stage's percentage, skips by
reason, the source that already holds a text, and why a folder gave nothing."""

from __future__ import annotations

import io
import subprocess
import time
from pathlib import Path

import pytest

from engine import JobSnapshot
from engine.api import FileIssue
from ipc.cli import progress as P
from tests.ipc.cli.test_cli import ctx


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _snap(**kw: object) -> JobSnapshot:
    base: dict[str, object] = {"id": "a" * 16, "kind": "paths", "state": "running",
                               "created": 0.0}
    return JobSnapshot(**{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(time, "monotonic", c)  # the clock ipc.cli.progress reads
    return c


def test_a_log_gets_a_line_every_few_seconds_after_two(clock: Clock) -> None:
    out = io.StringIO()
    bar = P.JobProgress(out)
    for second in range(13):  # a job of 13 s, polled every 0.5 s
        for half in (0.0, 0.5):
            clock.now = 1000.0 + second + half
            done = second * 10
            bar.update(_snap(stage="keyword", files_total=200, files_done=done,
                             bytes_total=2_000_000, bytes=done * 10_000, chunks=done * 3,
                             current=f"/tree/f{done}.py"))
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # at 2 s, 7 s and 12 s: never silent, never a flood
    assert lines[0].startswith("storing: 20/200 files, 195.3 KB/1.9 MB, 60 chunks")
    assert "KB/s" in lines[1] and " left" in lines[1] and lines[1].endswith("/tree/f70.py")


def test_a_short_job_prints_nothing(clock: Clock) -> None:
    out = io.StringIO()
    bar = P.JobProgress(out)
    bar.update(_snap(stage="keyword", files_total=2, files_done=1))
    clock.now += 1.5
    bar.update(_snap(state="done", files_total=2, files_done=2), force=True)
    bar.close()
    assert out.getvalue() == ""


def test_the_vector_stage_moves_by_chunks_and_says_what_it_waits_for(clock: Clock) -> None:
    bar = P.JobProgress(io.StringIO())
    waiting = _snap(stage="vectors", to_embed=800, embedded=0, waiting="model")
    assert bar.line(waiting) == ("searchable by keyword now; meaning-search waits for the "
                                 "model to load")
    bar.line(_snap(stage="vectors", to_embed=800, embedded=100))
    clock.now += 4
    line = bar.line(_snap(stage="vectors", to_embed=800, embedded=320))
    assert line == ("searchable by keyword now; meaning-search 40% (320/800 chunks, "
                    "55 chunks/s, 8s left)")


def test_a_queued_job_names_the_one_ahead(clock: Clock) -> None:
    ahead = _snap(id="b" * 16, stage="vectors", to_embed=50, embedded=10)
    bar = P.JobProgress(io.StringIO(), describe=lambda jid: ahead if jid == ahead.id else None)
    queued = _snap(state="queued", waiting="job", behind=ahead.id)
    assert bar.line(queued) == "ingesting: queued behind job bbbbbbbb: ingest, 10/50 chunks " \
                               "embedded"
    assert bar.line(_snap(state="queued", waiting="paused")) == \
        "ingesting: queued; ingestion is paused"


def test_the_summary_tells_skips_by_reason_and_the_source_that_holds_a_text() -> None:
    snap = _snap(state="done", files_total=6, files_done=6, files_skipped=4, chunks=3,
                 skipped=(FileIssue("/p/__init__.py", "empty"), FileIssue("/p/py.typed", "empty"),
                          FileIssue("/p/cacert.pem", "blob", "base64")),
                 errors=(FileIssue("/p/x.json", "malformed"),))
    assert P.summary(snap) == ["2 ingested, 0 unchanged, 3 skipped, 1 failed, 3 chunks",
                               "  skipped: 1 blob (base64), 2 empty"]


def test_ctx_ingest_says_why_nothing_was_ingested_and_who_holds_a_text(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*\n")
    (repo / "notes.md").write_text("# Notes\n\nWords.\n")
    r = ctx("--local", "ingest", str(repo))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("0 ingested, 0 unchanged, 0 skipped, 0 failed, 0 chunks")
    assert "nothing to ingest: every entry was left out (2 by .gitignore)" in r.stderr
    first = ctx("--local", "ingest", "-", "--title", "Dawn", stdin="Moorings at dawn.\n")
    assert first.returncode == 0, first.stderr
    again = ctx("--local", "ingest", "-", "--title", "Other", stdin="Moorings at dawn.\n")
    assert again.returncode == 0 and "0 ingested, 1 unchanged" in again.stdout
    assert "already stored as source 1 \u201cDawn\u201d" in again.stderr


def test_ctx_status_says_how_many_sources_wait_for_vectors(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    import os

    from engine.errors import VectorStoreUnavailable
    from engine.facade import ContextEngine

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(2):
        (docs / f"d{i}.md").write_text(f"# Note {i}\n\nWords about buoy {i}.\n")
    with ContextEngine.open(os.environ["CTX_HOME"]) as eng:
        def down(*_: object, **__: object) -> None:
            raise VectorStoreUnavailable("test")

        monkeypatch.setattr(eng.rt.vectors, "add", down)
        assert eng.wait(eng.ingest(paths=[str(docs)]), timeout=60).state == "failed"
    r = ctx("--local", "status")
    assert r.returncode == 0, r.stderr
    assert ("waiting: 2 sources (2 chunks) wait for their vectors: searchable by keyword "
            "now, by meaning once made") in r.stdout
