"""What keeps the alert ``context_engine.ingestion.failed`` raised, and what clears it.

An alarm is never false: a file left out on purpose (empty, binary, a blob...)
is a skip, reported in its job and nothing more. A real failure raises the
alert: a file that could not be read or parsed (by path), or a write that
failed (by what: "store", "vectors"). The alert stays while any cause remains
and clears when the last one does: a failed file clears when a later ingest
stores it (or finds it unchanged, or skips it), when it is gone from disk, or
when a delete names it or a folder above it; a failed write clears with the
next write of the same kind that succeeds. Only counts reach the alert's
detail, never a path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from engine.metrics import ALERT_INGEST_FAILED, Metrics


class IngestAlerts:
    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._lock = threading.Lock()
        self._files: dict[str, str] = {}  # path -> reason
        self._writes: set[str] = set()

    def file_failed(self, path: str, reason: str) -> None:
        with self._lock:
            self._files[path] = reason
        self._update()

    def files_ok(self, paths: Iterable[str]) -> None:
        """These files were stored, found unchanged, or skipped on purpose."""
        with self._lock:
            gone = [p for p in paths if p in self._files]
            for p in gone:
                del self._files[p]
        if gone:
            self._update()

    def forget_under(self, path: str) -> None:
        """A delete named ``path``: its failures, and those of files under it, go."""
        prefix = path.rstrip("/") + "/"
        with self._lock:
            gone = [p for p in self._files if p == path or p.startswith(prefix)]
            for p in gone:
                del self._files[p]
        if gone:
            self._update()

    def prune(self) -> None:
        """Forget failed files that are no longer on disk."""
        with self._lock:
            paths = list(self._files)
        gone = [p for p in paths if not os.path.lexists(p)]
        if gone:
            with self._lock:
                for p in gone:
                    self._files.pop(p, None)
            self._update()

    def write_failed(self, what: str) -> None:
        with self._lock:
            self._writes.add(what)
        self._update()

    def write_ok(self, what: str) -> None:
        with self._lock:
            if what not in self._writes:
                return
            self._writes.discard(what)
        self._update()

    def _update(self) -> None:
        with self._lock:
            files, writes = len(self._files), sorted(self._writes)
        parts = [f"{files} file{'s' if files != 1 else ''} failed"] if files else []
        parts += [f"{w} write failed" for w in writes]
        self._metrics.alert(ALERT_INGEST_FAILED, bool(parts), "; ".join(parts))
