"""The stage timer of one search or build_context call.

A call runs named stages in order (plan as ``analysis``, the lanes, ``fetch``,
``rerank``, ``dedupe``, ``expand``, ``live``, ``pack``, ``access``); each is timed
once, in milliseconds, into ``timings``, the dict a payload carries, and
``total`` is the time since the timer was made. A lane that runs in a worker
thread records into the same timer (each stage writes its own key).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class StageTimer:
    """Milliseconds per named stage of one call, and the call's total."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name`` (recorded even when it raises)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = (time.perf_counter() - t) * 1000

    def total(self) -> float:
        """Milliseconds since the timer was made, recorded as ``total``."""
        self.timings["total"] = (time.perf_counter() - self._start) * 1000
        return self.timings["total"]
