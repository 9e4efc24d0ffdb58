"""An add far out of id order at scale (issue 35): a crash's leftovers embedded after a
restart land far below the last ids of a big index.

Before the side block every such add rebuilt every row copy-on-write (``add_rebuilt``,
kept for this before/after); now it goes to the side block (``add``). Both run on the
same index in one process, in turns (before, after, before, ...), each on its own
``--batch`` new ids far below the end: milliseconds per add (median, p95, max) and the
bytes it allocated at its peak (tracemalloc, one more add of each, untimed). Then, with
a prefilter set up (96 random directions, 4,000 candidates, 1,000 refined), queries
with the side block held, the seal's merge of it (``held``: in place), and the same
queries on the merged rows: the same answers. One BLAS thread, as the engine runs.

    python -m bench.far_add [--rows 1000000] [--dim 384] [--batch 150] [--adds 8]
                              [--queries 20]
"""

from __future__ import annotations

import argparse
import functools
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.stats import machine_state, summary, table
from engine.lab import ExactIndex


def _peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _queries(index: ExactIndex, queries: np.ndarray
             ) -> tuple[list[float], list[list[tuple[int, float]]]]:
    ms, hits = [], []
    for q in queries:
        t = time.perf_counter()
        hits.append(index.query(q, 50))
        ms.append((time.perf_counter() - t) * 1000)
    return ms, hits


def build(rows: int, dim: int) -> ExactIndex:
    """A float16 index of ``rows`` rows with even ids from 1,000,000 (room below for the
    leftovers' odd ids), appended 100k at a time."""
    rng = np.random.default_rng(0)
    index = ExactIndex(dim, compact=True)
    for at in range(0, rows, 100_000):
        k = min(100_000, rows - at)
        index.add(range(1_000_000 + 2 * at, 1_000_000 + 2 * (at + k), 2),
                  rng.standard_normal((k, dim), dtype=np.float32))
    return index


def run(rows: int, dim: int, batch: int, adds: int, queries_n: int) -> list[list[Any]]:
    index = build(rows, dim)
    rng = np.random.default_rng(1)
    low = iter(range(1, 1_000_000, 2))  # odd ids below every held one

    def leftovers() -> tuple[list[int], np.ndarray]:
        return ([next(low) for _ in range(batch)],
                rng.standard_normal((batch, dim), dtype=np.float32))

    paths = {"before: rebuild (add_rebuilt)": index.add_rebuilt, "after: side block (add)":
             index.add}
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(adds):
        for name, add in paths.items():
            ids, vecs = leftovers()
            t = time.perf_counter()
            add(ids, vecs)
            times[name].append((time.perf_counter() - t) * 1000)
    out = []
    for name, add in paths.items():
        ids, vecs = leftovers()
        peak = _peak_bytes(functools.partial(add, ids, vecs))
        s = summary(times[name])
        out.append([name, s["n"], round(s["p50"], 2), round(s["p95"], 2),
                    round(max(times[name]), 2), round(peak / 2**20, 1)])
    basis = np.linalg.qr(rng.standard_normal((dim, 96)))[0].astype(np.float32)
    index.set_prefilter(basis, 4000, first=64, refine=1000)  # the store's shape at 1M
    queries = rng.standard_normal((queries_n, dim)).astype(np.float32)
    aside = index.side_rows
    side_ms, with_side = _queries(index, queries)
    t = time.perf_counter()
    peak = _peak_bytes(index.held)
    fold = (time.perf_counter() - t) * 1000
    merged_ms, merged = _queries(index, queries)
    out.append([f"seal's merge of {aside} side rows (held, in place; traced)", 1,
                round(fold, 2), "-", "-", round(peak / 2**20, 1)])
    for name, ms in ((f"prefilter query, {aside} side rows", side_ms),
                     (f"prefilter query, merged (same answers: {with_side == merged})",
                      merged_ms)):
        s = summary(ms)
        out.append([name, s["n"], round(s["p50"], 2), round(s["p95"], 2),
                    round(max(ms), 2), "-"])
    print(f"index: {len(index):,} float16 rows x {dim} = "
          f"{index.nbytes() / 2**20:,.0f} MB; peak RSS of the process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--batch", type=int, default=150, help="rows per leftover add")
    ap.add_argument("--adds", type=int, default=8, help="timed adds of each path")
    ap.add_argument("--queries", type=int, default=20,
                    help="prefilter queries with the side block and merged")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    print(f"machine: {machine_state()}")
    with threadpool_limits(1, user_api="blas"):
        rows = run(args.rows, args.dim, args.batch, args.adds, args.queries)
    print(table(["far-out-of-order add", "adds", "p50 ms", "p95 ms", "max ms",
                 "peak traced MB"], rows))
    print(f"machine: {machine_state()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
