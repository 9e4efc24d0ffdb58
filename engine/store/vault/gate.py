"""The vault's read gate: calls that read hold it shared, a file swap holds it alone.

A key rotation (``engine.store.vault.rekey.swap_in``) replaces vault.db while the engine
runs. Its connections must all be closed first (the last one to close folds the
write-ahead log back and deletes it; one left open would later delete the new
file's log by name), and none may be in the middle of a query then. The engine's
reading calls (search, build_context, status...) hold ``shared()`` for their
length; ``alone()`` waits (a bounded time) until none holds it, keeps new ones out (they wait, for
the few milliseconds the swap takes) and lets them in again after. A thread
already reading may read again (a call inside a call) without waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class ReadGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._closed = False  # a swap holds it, or waits for the readers to leave
        self._mine = threading.local()

    @contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._mine, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._closed:
                    self._cond.wait()
                self._readers += 1
        self._mine.depth = depth + 1
        try:
            yield
        finally:
            self._mine.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    self._cond.notify_all()

    @contextmanager
    def alone(self, timeout: float) -> Iterator[None]:
        """No reading call runs inside this block (called from a thread not reading).
        TimeoutError when the readers have not all left within ``timeout`` seconds (a
        reading call that waits for what the caller holds would never leave)."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._closed:
                self._cond.wait()
            self._closed = True
            try:
                while self._readers:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("reading calls did not end")
                    self._cond.wait(left)
            except BaseException:
                self._closed = False
                self._cond.notify_all()
                raise
        try:
            yield
        finally:
            with self._cond:
                self._closed = False
                self._cond.notify_all()
