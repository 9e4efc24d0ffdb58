"""FolderWatcher: real watchdog observers on real folders, debounced batches."""

from __future__ import annotations

import queue
import time
from pathlib import Path

from engine.watching.folders import FolderWatcher, ignored


def _next(batches: queue.Queue[tuple[list[str], list[str]]], timeout: float = 20.0
          ) -> tuple[list[str], list[str]]:
    return batches.get(timeout=timeout)


def _collect(batches: queue.Queue[tuple[list[str], list[str]]], want: str, *, deleted: bool,
             timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        changed, gone = batches.get(timeout=max(0.1, deadline - time.monotonic()))
        if want in (gone if deleted else changed):
            return
    raise AssertionError(f"{want} never reported")


def test_changes_are_batched_and_deletes_reported(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    batches: queue.Queue[tuple[list[str], list[str]]] = queue.Queue()
    watcher = FolderWatcher(lambda c, d: batches.put((c, d)), delay=0.3)
    try:
        assert watcher.set_folders([str(folder)]) == {}
        note = folder / "a.md"
        for i in range(5):  # a burst of writes is one batch
            note.write_text(f"# version {i}\n", encoding="utf-8")
        changed, deleted = _next(batches)
        assert changed == [str(note.resolve())] and deleted == []
        note.unlink()
        _collect(batches, str(note.resolve()), deleted=True)
    finally:
        watcher.close()


def test_scratch_and_hidden_files_are_ignored(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    batches: queue.Queue[tuple[list[str], list[str]]] = queue.Queue()
    watcher = FolderWatcher(lambda c, d: batches.put((c, d)), delay=0.2)
    try:
        watcher.set_folders([str(folder)])
        (folder / ".hidden.md").write_text("x", encoding="utf-8")
        (folder / "draft.md.swp").write_text("x", encoding="utf-8")
        (folder / "real.txt").write_text("x", encoding="utf-8")
        changed, _ = _next(batches)
        assert changed == [str((folder / "real.txt").resolve())]
    finally:
        watcher.close()


def test_new_folder_is_reported_once_not_file_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    batches: queue.Queue[tuple[list[str], list[str]]] = queue.Queue()
    watcher = FolderWatcher(lambda c, d: batches.put((c, d)), delay=0.5)
    try:
        watcher.set_folders([str(folder)])
        staging = tmp_path / "staging"
        staging.mkdir()
        for i in range(3):
            (staging / f"{i}.txt").write_text("x", encoding="utf-8")
        staging.rename(folder / "moved-in")
        changed, _ = _next(batches)
        assert changed == [str((folder / "moved-in").resolve())]
    finally:
        watcher.close()


def test_missing_and_plain_file_folders_are_reported(tmp_path: Path) -> None:
    afile = tmp_path / "f.txt"
    afile.write_text("x", encoding="utf-8")
    watcher = FolderWatcher(lambda c, d: None)
    try:
        problems = watcher.set_folders([str(tmp_path / "nope"), str(afile), str(tmp_path)])
        assert problems == {str(tmp_path / "nope"): "does not exist", str(afile): "not a folder"}
        assert watcher.folders == [str(tmp_path.resolve())]
    finally:
        watcher.close()


def test_ignored_paths() -> None:
    assert ignored("/a/.git/config")
    assert ignored("/a/b.txt~")
    assert ignored("/data/ctx/vault.db", ["/data/ctx"])
    assert not ignored("/data/ctxx/vault.db", ["/data/ctx"])
    assert not ignored("/a/b/notes.md")


def test_a_failing_handler_does_not_stop_the_watcher(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    calls: queue.Queue[list[str]] = queue.Queue()

    def handler(changed: list[str], deleted: list[str]) -> None:
        calls.put(changed)
        raise RuntimeError("boom")

    watcher = FolderWatcher(handler, delay=0.2)
    try:
        watcher.set_folders([str(folder)])
        (folder / "1.txt").write_text("x", encoding="utf-8")
        calls.get(timeout=20)
        (folder / "2.txt").write_text("x", encoding="utf-8")
        assert str((folder / "2.txt").resolve()) in calls.get(timeout=20)
    finally:
        watcher.close()
