"""Watched folders as an engine service: a real engine (fake embedder), real folders, real
watchdog. ``ContextEngine.watch`` catches up (ingests the folder, removes stored files that
are gone), then ingests changed files and deletes removed ones, and says what it did
through ``WatchChanged`` events."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from pathlib import Path

from engine import ContextEngine, Event, WatchChanged, WatchReport


def _until(engine: ContextEngine, test: Callable[[set[str]], bool], timeout: float = 30.0
           ) -> set[str]:
    deadline = time.monotonic() + timeout
    while True:
        uris = {s.uri for s in engine.sources()}
        if test(uris):
            return uris
        assert time.monotonic() < deadline, f"sources never matched: {sorted(uris)}"
        time.sleep(0.1)


def _reports(events: queue.Queue[Event]) -> list[WatchReport]:
    seen = []
    while not events.empty():
        event = events.get()
        if isinstance(event, WatchChanged):
            seen.append(event.report)
    return seen


def test_catch_up_then_changes_and_deletes_follow(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    kept, gone = notes / "kept.md", notes / "gone.md"
    kept.write_text("# Kept\n\nThe harbour master keeps the tide tables.\n")
    gone.write_text("# Gone\n\nThis note is deleted while nobody watches.\n")
    with ContextEngine.open(data_dir) as engine:
        events: queue.Queue[Event] = queue.Queue()
        engine.subscribe(events.put)
        engine.wait(engine.ingest(paths=[str(notes)]), timeout=60)
        gone.unlink()  # while not watched: the catch-up removes it
        first = engine.watch([str(notes), str(tmp_path / "missing")])
        assert first.folders == (str(notes.resolve()),)
        assert first.problems == {str(tmp_path / "missing"): "does not exist"}
        assert engine.watched() == first
        _until(engine, lambda uris: uris == {str(kept.resolve())})
        fresh = notes / "fresh.md"
        fresh.write_text("# Fresh\n\nA new note about lighthouses.\n")
        _until(engine, lambda uris: str(fresh.resolve()) in uris)
        kept.unlink()
        _until(engine, lambda uris: str(kept.resolve()) not in uris)
        seen = _reports(events)
        assert any(r.removed for r in seen) and any(r.job for r in seen)
        assert engine.watch([]).folders == ()
        assert engine.watched().folders == ()


def test_watch_follows_the_config_and_stops_with_the_engine(data_dir: Path,
                                                             tmp_path: Path) -> None:
    notes = tmp_path / "configured"
    notes.mkdir()
    (notes / "tide.md").write_text("# Tides\n\nSpring tides follow the new moon.\n")
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(f'[ingest]\nwatched_folders = ["{notes}"]\n')
    engine = ContextEngine.open(data_dir)
    events: queue.Queue[Event] = queue.Queue()
    try:
        assert engine.watched().folders == ()  # nothing is watched until asked
        assert engine.watch().folders == (str(notes.resolve()),)
        _until(engine, lambda uris: str((notes / "tide.md").resolve()) in uris)
        time.sleep(0.5)  # the catch-up's own reports are told before the close
        engine.subscribe(events.put)
    finally:
        engine.close()
    # closed: the folder is no longer followed. A watcher left running would try to
    # ingest the new file and tell its engine_closed error as a WatchChanged event.
    (notes / "late.md").write_text("# Late\n\nWritten after the engine closed.\n")
    time.sleep(3.0)  # twice the debounce
    assert _reports(events) == []


def test_a_folder_added_later_is_caught_up_alone(data_dir: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "note.md").write_text(f"# {folder.name}\n\nA note about {folder.name}.\n")
    with ContextEngine.open(data_dir) as engine:
        events: queue.Queue[Event] = queue.Queue()
        engine.subscribe(events.put)
        engine.watch([str(first)])
        _until(engine, lambda uris: str((first / "note.md").resolve()) in uris)
        _reports(events)
        engine.watch([str(first), str(second)])
        _until(engine, lambda uris: str((second / "note.md").resolve()) in uris)
        deadline = time.monotonic() + 10
        jobs: list[WatchReport] = []
        while time.monotonic() < deadline and not jobs:
            jobs = [r for r in _reports(events) if r.job]
            time.sleep(0.1)
        assert jobs and all(r.paths == (str(second.resolve()),) for r in jobs)
