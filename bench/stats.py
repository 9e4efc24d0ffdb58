"""Small helpers for benchmark tables: percentiles and aligned markdown tables."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from engine.lab import percentile

pct = percentile  # the engine's own, so benchmarks and metrics agree


def load_avg() -> str:
    """The machine's 1/5/15-minute load averages, for printing beside a timing."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_probe() -> float:
    """Milliseconds a fixed pure-Python loop takes now (best of 3). The shared VM's cores
    change speed by up to 2x from minute to minute at the same load average (10M additions
    took 0.92 s and 1.72 s a minute apart, 2026-11-23); print this beside timings so that
    runs can be put side by side, and compare only ratios within one run."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        s = 0
        for i in range(1_000_000):
            s += i
        best = min(best, (time.perf_counter() - t) * 1000)
    return best


def machine_state() -> str:
    """The load averages and ``cpu_probe``, for printing before and after a timed run."""
    return f"{load_avg()}, cpu probe {cpu_probe():.0f} ms"


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Milliseconds of the fastest of ``repeat`` calls, and the last result."""
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, (time.perf_counter() - t) * 1000)
    return best, out


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95),
            "mean": statistics.fmean(values) if values else float("nan")}


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    body = [[cell(v) for v in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)
