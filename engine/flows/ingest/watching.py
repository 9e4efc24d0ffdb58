"""Watched folders as an engine service (``ContextEngine.watch``), for whoever hosts the
engine: the desktop app and ``ctx serve`` alike.

The folders are the engine's ``[ingest] watched_folders``. On start, and for a
folder added later, each folder is ingested once (unchanged files are skipped)
and stored files that vanished meanwhile leave the store. Then
:class:`~engine.watching.folders.FolderWatcher` reports debounced batches: changed
files are ingested again, deleted ones are deleted from the store.

The service is given the engine's calls it makes (``ingest``, ``delete``, ``sources``:
the facade's public methods, so that they are audited and announced as any caller's);
they run on the watcher's own threads (never the caller's GUI thread), as caller
"watch". What happened is told through ``emit`` with a
:class:`~engine.api.WatchReport` (on those threads), which the facade announces
as a ``WatchChanged`` event to its subscribers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.api import DeleteResult, ErrorInfo, SourceInfo, WatchReport
from engine.calls import caller
from engine.errors import CtxError, InternalError, NotFound

__all__ = ["DELAY_S", "MAX_WAIT_S", "WatchService"]

log = logging.getLogger("ctx.watch")

# Debounce: a folder quiet this long (s) is read; one that keeps changing at most this late.
DELAY_S = 1.5
MAX_WAIT_S = 10.0


def _error(exc: BaseException) -> ErrorInfo:
    if isinstance(exc, CtxError):
        return ErrorInfo.of(exc)
    return ErrorInfo.of(InternalError.of(exc, "watched folders"))


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip("/") + "/")


class WatchService:
    """Follows the engine's watched folders (see the module docstring)."""

    def __init__(self, data_dir: Path, configured: Sequence[str], *,
                 ingest: Callable[[list[str]], str],
                 delete: Callable[[str | int], DeleteResult],
                 sources: Callable[[], list[SourceInfo]],
                 emit: Callable[[WatchReport], None] | None = None,
                 delay: float = DELAY_S, max_wait: float = MAX_WAIT_S) -> None:
        self._data_dir = data_dir  # never watched: the store's own files
        self._configured = tuple(configured)  # the config's ``[ingest] watched_folders``
        # the engine's calls (its public methods), made as caller "watch"
        self._ingest_paths, self._delete, self._sources = ingest, delete, sources
        self._on_report = emit
        self._delay, self._max_wait = delay, max_wait
        self._watcher: Any = None
        self._problems: dict[str, str] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        self.last = WatchReport(())

    @property
    def folders(self) -> tuple[str, ...]:
        return tuple(self._watcher.folders) if self._watcher is not None else ()

    def configured(self) -> tuple[str, ...]:
        """The folders the engine's config names."""
        return self._configured

    def follow(self, folders: Sequence[str]) -> WatchReport:
        """Follow exactly ``folders`` now. The first call catches up on each of them;
        later ones (after a settings change) on those new to the list."""
        first, self._started = not self._started, True
        return self._set(folders, catch_up_all=first)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.close()

    # -- following ------------------------------------------------------------------------
    def _set(self, folders: Sequence[str], *, catch_up_all: bool) -> WatchReport:
        with self._lock:
            if self._closed:
                return self.last
            before = set(self.folders)
            if not folders:  # stop watching: no timer left to queue a change
                self._problems = {}
                stopped, self._watcher = self._watcher, None
                if stopped is not None:
                    stopped.close()
                return self._report()
            if self._watcher is None:
                try:
                    from engine.watching.folders import FolderWatcher
                except ImportError:
                    self._problems = {f: "watching needs the watchdog package" for f in folders}
                    return self._report()
                self._watcher = FolderWatcher(self._batch, delay=self._delay,
                                              max_wait=self._max_wait,
                                              exclude=[str(self._data_dir)])
            self._problems = self._watcher.set_folders(list(folders))
            fresh = [f for f in self._watcher.folders if catch_up_all or f not in before]
        report = self._report()
        if fresh:
            threading.Thread(target=self._catch_up, args=(fresh,), name="ctx-watch-catch-up",
                             daemon=True).start()
        return report

    def _report(self, **event: Any) -> WatchReport:
        report = WatchReport(self.folders, dict(self._problems), **event)
        if event and self._closed:  # a call that met the engine closing: nobody to tell
            return report
        if not event:
            self.last = report
        if self._on_report is not None:
            try:
                self._on_report(report)
            except Exception:  # the listener's bug must not stop the watching
                log.exception("watched folders: the report listener failed")
        return report

    def _catch_up(self, folders: list[str]) -> None:
        """Ingest ``folders`` once and remove stored files under them that are gone."""
        self._ingest(folders)
        try:
            with caller("watch"):
                gone = [s.id for s in self._sources()
                        if any(_under(s.uri, f) for f in folders) and not Path(s.uri).exists()]
                for source_id in gone:
                    self._delete(source_id)
        except Exception as exc:  # noqa: BLE001 - told, never lost
            self._report(error=_error(exc))
            return
        if gone:
            self._report(removed=len(gone))

    def _batch(self, changed: list[str], deleted: list[str]) -> None:
        """The watcher's timer thread: ingest what changed, delete what went."""
        if self._closed:
            return
        if changed:
            self._ingest(changed)
        if deleted:
            removed = 0
            try:
                with caller("watch"):
                    for path in deleted:
                        try:
                            removed += self._delete(path).deleted
                        except NotFound:
                            pass  # never stored (skipped, or not a file ctx reads)
            except Exception as exc:  # noqa: BLE001 - told, never lost
                self._report(error=_error(exc))
            if removed:
                self._report(removed=removed)

    def _ingest(self, paths: list[str]) -> None:
        try:
            with caller("watch"):
                job = self._ingest_paths(list(paths))
        except Exception as exc:  # noqa: BLE001 - told, never lost
            self._report(error=_error(exc))
            return
        self._report(job=job, paths=tuple(paths))
