"""Watched folders: files that change are ingested again, files that go leave the store.

``FolderWatcher`` follows folders with the ``watchdog`` library (inotify,
FSEvents, ReadDirectoryChangesW) and reports changes in batches: events are
gathered until the folders have been quiet for ``delay`` seconds (or for at
most ``max_wait`` seconds while they keep changing), then each path is judged
by what is on disk at that moment: present -> changed, absent -> deleted. An
editor's save-by-rename or a burst of writes is therefore one re-ingest.

It knows nothing of the engine: ``on_batch(changed, deleted)`` is called on the
watcher's timer thread; :mod:`engine.flows.ingest.watching` turns batches into ingests and
deletes (``ContextEngine.watch``), for the desktop app and ``ctx serve`` alike.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

__all__ = ["Batch", "FolderWatcher", "ignored"]

log = logging.getLogger("ctx.watch")

Batch = Callable[[list[str], list[str]], None]

# Editors' and tools' scratch files: never ingested, their churn is ignored.
_SCRATCH_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload", ".lock")


def ignored(path: str, extra: Iterable[str] = ()) -> bool:
    """True for hidden files and folders, editors' scratch files and paths under ``extra``."""
    p = Path(path)
    if any(part.startswith(".") for part in p.parts[1:]):
        return True
    name = p.name
    if name.startswith(("#", ".#")) or name.endswith(_SCRATCH_SUFFIXES):
        return True
    for root in extra:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: FolderWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # a folder "modified" means an entry changed; that entry has its own event
        paths = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(dest)
        self._watcher._note([os.fsdecode(p) for p in paths])


class FolderWatcher:
    """Follows a set of folders and reports debounced batches of changed and deleted paths."""

    def __init__(self, on_batch: Batch, *, delay: float = 1.0, max_wait: float = 10.0,
                 exclude: Sequence[str] = ()) -> None:
        self._on_batch = on_batch
        self._delay = delay
        self._max_wait = max_wait
        self._exclude = [str(Path(p).resolve()) for p in exclude]
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._first = 0.0
        self._timer: threading.Timer | None = None
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._folders: list[str] = []
        self._closed = False

    @property
    def folders(self) -> list[str]:
        return list(self._folders)

    def set_folders(self, folders: Sequence[str]) -> dict[str, str]:
        """Watch exactly ``folders``; returns {folder: reason} for those that cannot be watched."""
        problems: dict[str, str] = {}
        wanted: list[str] = []
        for folder in folders:
            path = Path(folder).expanduser()
            if not path.is_dir():
                problems[folder] = "not a folder" if path.exists() else "does not exist"
                continue
            if not os.access(path, os.R_OK | os.X_OK):
                problems[folder] = "not readable"
                continue
            wanted.append(str(path.resolve()))
        self._restart(wanted, problems)
        return problems

    def _restart(self, wanted: list[str], problems: dict[str, str]) -> None:
        self._stop_observer()
        self._folders = []
        if not wanted or self._closed:
            return
        observer = Observer()
        observer.daemon = True
        handler = _Handler(self)
        for folder in wanted:
            try:
                observer.schedule(handler, folder, recursive=True)
                self._folders.append(folder)
            except OSError as exc:
                problems[folder] = f"cannot be watched ({exc.strerror or exc.__class__.__name__})"
        try:
            observer.start()
        except OSError as exc:  # e.g. the inotify watch limit: say so for every folder
            why = f"cannot be watched ({exc.strerror or exc.__class__.__name__})"
            problems.update({folder: why for folder in self._folders})
            self._folders = []
            observer.stop()
            return
        self._observer = observer

    def _note(self, paths: list[str]) -> None:
        with self._lock:
            if self._closed:
                return
            fresh = False
            for path in paths:
                if ignored(path, self._exclude) or path in self._folders:
                    continue
                self._pending.add(path)
                fresh = True
            if not fresh:
                return
            now = time.monotonic()
            if self._timer is None:
                self._first = now
            else:
                self._timer.cancel()
            wait = min(self._delay, max(0.0, self._first + self._max_wait - now))
            self._timer = threading.Timer(wait, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        """Report what is pending now (the timer calls this; tests may too)."""
        with self._lock:
            pending, self._pending = self._pending, set()
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None
        if not pending:
            return
        changed: list[str] = []
        deleted: list[str] = []
        for path in sorted(pending):
            (changed if os.path.exists(path) else deleted).append(path)
        # A folder that appeared is ingested whole: its files' own events would repeat it.
        folders = [p for p in changed if os.path.isdir(p)]
        changed = [p for p in changed if not _under_any(p, folders)]
        try:
            self._on_batch(changed, deleted)
        except Exception:  # the caller's bug must not kill the watcher's thread silently
            log.exception("watched folders: the change handler failed")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None
            self._pending.clear()
        self._stop_observer()
        self._folders = []

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)


def _under_any(path: str, folders: Sequence[str]) -> bool:
    return any(path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
