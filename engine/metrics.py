"""In-process metrics: duration histograms, counters and alerts.

Names follow the module specification (``context_engine.*``). Values are ids,
counts and timings only, never content. An alert that is raised or cleared is
announced to ``on_change`` (AlertRaised, AlertCleared), so nobody polls for it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from engine.api import Alert, AlertCleared, AlertRaised, Event

BUILD_MS = "context_engine.build.duration_ms"
QUERY_MS = "context_engine.rag_query.duration_ms"
TOKEN_ACCURACY = "context_engine.packing.token_accuracy_percent"
ALERT_VECTOR_DOWN = "context_engine.vector_db.unavailable"
ALERT_INGEST_FAILED = "context_engine.ingestion.failed"
ALERT_VECTOR_REBUILD = "context_engine.vector_db.rebuilding"  # vectors rebuilt from the vault
ALERT_VECTOR_INCOMPLETE = "context_engine.vector_db.incomplete"  # counts differ: `ctx repair`
ALERT_VAULT_DAMAGED = "context_engine.vault.damaged"  # a page failed its check: restore
# the writer thread ended by an error: nothing more is stored until the engine restarts
ALERT_WRITER_FAILED = "context_engine.writer.failed"


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    idx = min(len(s) - 1, max(0, round(q / 100.0 * (len(s) - 1))))
    return s[idx]


class Metrics:
    def __init__(self, window: int = 2048,
                 on_change: Callable[[Event], None] | None = None) -> None:
        self._on_change = on_change
        self._lock = threading.Lock()
        self._hist: dict[str, deque[float]] = {}
        self._counters: dict[str, int] = {}
        self._alerts: dict[str, dict[str, Any]] = {}
        self._window = window

    def observe(self, name: str, value: float) -> None:
        with self._lock:
            self._hist.setdefault(name, deque(maxlen=self._window)).append(float(value))

    def incr(self, name: str, by: int = 1) -> None:
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + by

    def alert(self, name: str, active: bool, detail: str = "") -> None:
        """Raise (again: counted) or clear an alert; a change of state is announced."""
        event: Event | None = None
        with self._lock:
            if active:
                raised = name not in self._alerts
                entry = self._alerts.setdefault(name, {"since": time.time(), "count": 0})
                entry["count"] += 1
                entry["last"] = time.time()
                entry["detail"] = detail
                if raised:
                    event = AlertRaised(Alert(name=name, **entry))
            elif self._alerts.pop(name, None) is not None:
                event = AlertCleared(name)
        if event is not None and self._on_change is not None:
            self._on_change(event)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            hist = {
                name: {"count": len(v), "p50": percentile(list(v), 50),
                       "p95": percentile(list(v), 95), "p99": percentile(list(v), 99),
                       "max": max(v) if v else 0.0}
                for name, v in self._hist.items()
            }
            return {"histograms": hist, "counters": dict(self._counters),
                    "gauges": {},  # none is kept: the field stays on the wire (docs/wire.md)
                    "alerts": {k: dict(v) for k, v in self._alerts.items()}}
