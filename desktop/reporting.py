"""A thin proxy of the engine that reports what the desktop must show.

The engine stays Qt-free: the host hands the IPC server (and every task the
GUI runs) a :class:`ReportingEngine`, which forwards each call unchanged and,
after a ``build_context`` or a ``delete``, calls ``report(kind, data)`` on
the calling (worker) thread. The host turns those reports into Qt signals.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("ctx.desktop")

Report = Callable[[str, dict[str, Any]], None]

_TIERS = ("full", "gist", "micro")


def item_tier(kind: str, why: str) -> str | None:
    """The surrogate tier an item was packed at (None for chunks and live items)."""
    if kind != "surrogate":
        return None
    parts = set(re.split(r"[|:]", why))
    for tier in _TIERS:
        if tier in parts:
            return tier
    return "surrogate"


def build_summary(payload: Any, *, origin: str, started: float, duration_ms: float,
                  query: str | None = None) -> dict[str, Any]:
    """What ``build_finished`` carries: sizes, timings and items, no payload text.

    ``query`` is kept for builds made in this window only; IPC callers' query
    text never leaves the engine's audit-free path.
    """
    data = payload.to_dict() if hasattr(payload, "to_dict") else dict(payload)
    items = []
    for item in data.get("items") or []:
        kind = str(item.get("kind", ""))
        items.append({"kind": kind, "tokens": int(item.get("tokens", 0)),
                      "source": str(item.get("source", "")),
                      "score": float(item.get("score", 0.0)),
                      "lanes": dict(item.get("lanes") or {}),
                      "tier": item_tier(kind, str(item.get("why", "")))})
    out: dict[str, Any] = {
        "origin": origin, "time": started, "duration_ms": round(duration_ms, 3),
        "budget": int(data.get("budget", 0)), "total_tokens": int(data.get("total_tokens", 0)),
        "items": items, "timings": dict(data.get("timings") or {}),
    }
    if origin == "gui" and query is not None:
        out["query"] = query
    return out


class ReportingEngine:
    """Forwards every attribute to ``engine``; reports builds and deletes to ``report``."""

    def __init__(self, engine: Any, origin: str, report: Report) -> None:
        self._engine = engine
        self._origin = origin
        self._report = report

    @property
    def wrapped(self) -> Any:
        return self._engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def build_context(self, query: str, *args: Any, **kwargs: Any) -> Any:
        started, t0 = time.time(), time.perf_counter()
        payload = self._engine.build_context(query, *args, **kwargs)
        elapsed = (time.perf_counter() - t0) * 1000
        try:
            self._report("build", build_summary(payload, origin=self._origin, started=started,
                                                duration_ms=elapsed, query=query))
        except Exception:  # reporting never fails the caller's build
            log.exception("build report failed")
        return payload

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        result = self._engine.delete(*args, **kwargs)
        self._report("sources", {"origin": self._origin})
        return result
