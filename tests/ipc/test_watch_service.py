"""Watched folders as a service: a real engine (fake embedder), real folders, real watchdog.

The service catches up on start (ingests the folder, removes stored files that are
gone), then ingests changed files and deletes removed ones; ``ctx serve`` runs it
for the config's [ingest] watched_folders."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engine import ContextEngine
from ipc.connection import ConnectionInfo
from ipc.remote import RemoteEngine
from ipc.serve import serve
from ipc.watch_service import WatchReport, WatchService
from tests.ipc.conftest import wait_for


def _until(engine: ContextEngine, test: Callable[[set[str]], bool], timeout: float = 30.0
           ) -> set[str]:
    deadline = time.monotonic() + timeout
    while True:
        uris = {s.uri for s in engine.sources()}
        if test(uris):
            return uris
        assert time.monotonic() < deadline, f"sources never matched: {sorted(uris)}"
        time.sleep(0.1)


def test_catch_up_then_changes_and_deletes_follow(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    kept, gone = notes / "kept.md", notes / "gone.md"
    kept.write_text("# Kept\n\nThe harbour master keeps the tide tables.\n")
    gone.write_text("# Gone\n\nThis note is deleted while nobody watches.\n")
    engine = ContextEngine.open(data_dir)
    reports: queue.Queue[WatchReport] = queue.Queue()
    service = WatchService(engine, on_report=reports.put, delay=0.2)
    try:
        engine.wait(engine.ingest(paths=[str(notes)]), timeout=60)
        gone.unlink()  # while not watched: the catch-up removes it
        first = service.start([str(notes), str(tmp_path / "missing")])
        assert first.folders == (str(notes.resolve()),)
        assert first.problems == {str(tmp_path / "missing"): "does not exist"}
        _until(engine, lambda uris: uris == {str(kept.resolve())})
        fresh = notes / "fresh.md"
        fresh.write_text("# Fresh\n\nA new note about lighthouses.\n")
        _until(engine, lambda uris: str(fresh.resolve()) in uris)
        kept.unlink()
        _until(engine, lambda uris: str(kept.resolve()) not in uris)
        seen: list[WatchReport] = []
        while not reports.empty():
            seen.append(reports.get())
        assert any(r.removed for r in seen) and any(r.job for r in seen)
        assert service.update([]).folders == ()
    finally:
        service.close()
        engine.close()


def test_ctx_serve_watches_the_configured_folders(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "served"
    notes.mkdir()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(f'[ingest]\nwatched_folders = ["{notes}"]\n')
    ready: list[ConnectionInfo] = []
    thread = threading.Thread(target=serve, args=(data_dir,), kwargs={"ready": ready.append},
                              daemon=True)
    thread.start()
    wait_for(lambda: ready, timeout=60)
    with RemoteEngine(ready[0], timeout=20) as remote:
        try:
            (notes / "tide.md").write_text("# Tides\n\nSpring tides follow the new moon.\n")
            deadline = time.monotonic() + 30
            while not any(s.uri.endswith("tide.md") for s in remote.sources()):
                assert time.monotonic() < deadline, "the served engine never ingested it"
                time.sleep(0.2)
        finally:
            remote.shutdown()
    thread.join(30)
    assert not thread.is_alive()
