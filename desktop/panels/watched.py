"""The Ingestion panel's watched-folders section: the folders config.toml names, followed
with ``desktop.watch.FolderWatcher``; changed files are ingested again through the host,
deleted files leave the store (``engine.delete`` by path, on a pool worker).

On start, and when Settings adds a folder, the folder is ingested once (unchanged files
are skipped by the engine) and stored files that vanished meanwhile are deleted.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop import config_io
from desktop.panels.widgets import error_text, heading, muted
from desktop.qt import QListWidget, QObject, Qt, QVBoxLayout, QWidget, Signal
from desktop.watch import FolderWatcher
from engine import CtxError, NotFound

Notify = Callable[[str, str], None]  # (banner kind, text)


class _WatchBridge(QObject):
    """Carries the watcher's batches (its timer thread) onto the GUI thread.

    No Python object crosses threads inside a queued signal (PySide can free it
    off the GIL): batches go in a queue and an argument-less signal wakes the GUI.
    """

    wake = Signal()

    def __init__(self, deliver: Callable[[list[str], list[str]], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._deliver = deliver
        self._batches: queue.SimpleQueue[tuple[list[str], list[str]]] = queue.SimpleQueue()
        self.wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    def put(self, changed: list[str], deleted: list[str]) -> None:  # the watcher's thread
        self._batches.put((changed, deleted))
        self.wake.emit()

    def _drain(self) -> None:
        while True:
            try:
                changed, deleted = self._batches.get_nowait()
            except queue.Empty:
                return
            self._deliver(changed, deleted)


def vanished_under(folders: list[str]) -> Callable[[Any], int]:
    """Worker: delete stored sources under ``folders`` whose files are gone; how many."""
    def work(engine: Any) -> int:
        gone = 0
        for source in engine.sources():
            uri = source.uri
            if any(uri.startswith(f.rstrip("/") + "/") for f in folders) \
                    and not Path(uri).exists():
                engine.delete(source.id)
                gone += 1
        return gone
    return work


def delete_paths(paths: list[str]) -> Callable[[Any], int]:
    """Worker: delete the sources stored for ``paths`` (never stored: nothing to do)."""
    def work(engine: Any) -> int:
        gone = 0
        for path in paths:
            try:
                gone += engine.delete(path).deleted
            except NotFound:
                pass  # skipped when ingested, or not a file ctx reads
        return gone
    return work


class WatchedFolders(QWidget):
    def __init__(self, host: Any, notify: Notify, parent: QWidget | None = None, *,
                 delay: float = 1.5) -> None:
        super().__init__(parent)
        self.host = host
        self._notify = notify
        self.list = QListWidget()
        self.list.setMaximumHeight(110)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(heading("Watched folders"))
        box.addWidget(muted("Changed files are ingested again and deleted files leave the "
                            "store. Add or remove folders in Settings."))
        box.addWidget(self.list)
        self.problems: dict[str, str] = {}
        self._bridge = _WatchBridge(self._on_batch, self)
        exclude = [str(host.data_dir)] if getattr(host, "data_dir", None) else []
        self.watcher = FolderWatcher(self._bridge.put, delay=delay, exclude=exclude)

    def reload(self, catch_up: bool = False) -> None:
        """Watch the folders config.toml's [desktop] table names (after Settings saves)."""
        data_dir = getattr(self.host, "data_dir", None)
        if data_dir is None:
            return
        try:
            folders = list(config_io.read(data_dir).desktop.watched_folders)
        except CtxError as exc:  # a broken config.toml: say so, watch nothing
            self.problems = {}
            self.watcher.set_folders([])
            self._draw([], f"config.toml: {error_text(exc)}")
            return
        before = set(self.watcher.folders)
        self.problems = self.watcher.set_folders(folders)
        self._draw(folders, "")
        fresh = [f for f in self.watcher.folders if catch_up or f not in before]
        if fresh and getattr(self.host, "engine_ready", False):
            self.host.ingest_paths(fresh)
            self.host.run(vanished_under(fresh), success=self._removed,
                          failure=self._failed)

    def _draw(self, folders: list[str], problem: str) -> None:
        self.list.clear()
        if problem:
            self.list.addItem(problem)
        if not folders and not problem:
            self.list.addItem("No folder is watched.")
        for folder in folders:
            why = self.problems.get(folder)
            self.list.addItem(f"{folder}  —  {'not watched: ' + why if why else 'watching'}")

    def _on_batch(self, changed: list[str], deleted: list[str]) -> None:
        if changed:
            self.host.ingest_paths(changed)
        if deleted:
            self.host.run(delete_paths(deleted), success=self._removed, failure=self._failed)

    def _removed(self, count: int) -> None:
        if count:
            self._notify("info", f"{count} deleted file{'s' if count != 1 else ''} removed "
                         "from the store.")

    def _failed(self, error: BaseException) -> None:
        self._notify("error", "Watched folders: " + error_text(error))

    def close_watcher(self) -> None:
        self.watcher.close()
