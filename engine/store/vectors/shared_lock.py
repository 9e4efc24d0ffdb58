"""A lock that many readers hold at once and a writer alone.

The vector index's scan (tens of milliseconds at 500k rows) holds its arrays for
reading; a lookup of a few stored vectors (build_context's read-ahead of the keyword
hits, beside the vector lane) reads the same arrays and need not wait for it. A writer
waits until the readers present have left, and readers that come after a waiting
writer wait for it (no writer waits for ever). Not reentrant: a holder must not take
it again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SharedLock:
    """Shared (``read``) or exclusive (``write``) holds of one set of arrays."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        """Held beside other readers; waits while a writer holds or waits."""
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Held alone: waits until no reader or writer holds it."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()

    def locked(self) -> bool:
        """Whether anyone holds it now (tests)."""
        with self._cond:
            return self._writing or self._readers > 0
