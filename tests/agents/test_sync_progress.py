"""Transcript indexing reports its progress (files, bytes, chunks) and batches across files."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

from engine.api import Event, JobChanged, JobSnapshot
from engine.flows.recall import sync as recall_sync
from ipc.cli.progress import JobProgress
from tests.conftest import shared_data


def _sessions(tmp_path: Path, n: int = 5) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    files = sorted(shared_data("transcripts", "claude").glob("*.jsonl"),
                   key=lambda f: f.stat().st_size)[:n]
    for f in files:
        shutil.copy(f, folder / f.name)
    return folder


def test_sync_reports_progress_and_counts(engine: Any, tmp_path: Path,
                                          monkeypatch: Any) -> None:
    monkeypatch.setattr(recall_sync, "BATCH_CHUNKS", 40)  # several flushes across files
    folder = _sessions(tmp_path)
    seen: list[dict[str, Any]] = []
    from engine.flows.recall.entry import sync

    result = sync(engine.rt, engine._writer, [str(folder)], seen.append)
    assert seen[0]["files_done"] == 0 and seen[0]["bytes"] == 0
    total = sum(f.stat().st_size for f in folder.iterdir())
    assert all(s["files_total"] == 5 and s["bytes_total"] == total for s in seen)
    assert [s["files_done"] for s in seen] == list(range(6))
    assert seen[-1]["bytes"] == total and seen[-1]["chunks"] == result.chunks > 0
    assert all(str(folder) in s["current"] for s in seen[1:])  # a path, never content
    hits = engine.recall("the", k=50).hits
    assert {h.source.split("#")[0].rsplit("/", 1)[-1] for h in hits} <= {
        f.name for f in folder.iterdir()}
    again = sync(engine.rt, engine._writer, [str(folder)], seen.append)
    assert again.unchanged == 5 and again.chunks == 0


def test_sync_job_carries_progress(engine: Any, tmp_path: Path) -> None:
    folder = _sessions(tmp_path, 3)
    events: list[Event] = []
    engine.subscribe(events.append)
    engine.sync([str(folder)])
    snaps = [e.job for e in events if isinstance(e, JobChanged)]
    running = [s for s in snaps if s.kind == "sync" and s.state == "running"]
    assert running and running[-1].files_done == 3
    assert running[-1].bytes == running[-1].bytes_total > 0


def test_progress_line_names_files_bytes_chunks_rate_and_time_left() -> None:
    bar = JobProgress(io.StringIO(), every_s=0.0, after_s=0.0)

    def snap(files: int, mb: int) -> JobSnapshot:
        return JobSnapshot(id="j", kind="sync", state="running", created=0.0,
                           files_done=files, files_total=10, bytes=mb * 1024 * 1024,
                           bytes_total=10 * 1024 * 1024, chunks=140 * files)

    bar.line(snap(1, 1), now=100.0)
    line = bar.line(snap(3, 3), now=102.0)  # 2 MB in 2 s: 7 MB left at 1 MB/s
    assert line.startswith("indexing: 3/10 files")
    assert "3.0 MB/10.0 MB" in line and "420 chunks" in line
    assert "1.0 MB/s" in line and "7s left" in line
