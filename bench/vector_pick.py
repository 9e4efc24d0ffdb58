"""The vector index's query at scale (issue 35): the prefilter's candidates picked by an
``np.argpartition`` of every coarse score (before) and above a sampled threshold
(``select.cut``, after), in turns on the same index, one query at a time.

The index is the store's: ``MemoryVectors`` with the default config (float16 rows above
200k, 64 + 64 principal directions, max(4000, 20,000 per million) candidates, 2000 of
them refined) over real MiniLM vectors grown by their own covariance
(``bench.memory_index``), or over ``--sample`` (an .npy of vectors: tests). "before" is
``query_before``, the query as it was (main at e8dfb37). Per arm: wall and thread CPU
p50/p95 ms, and whether every answer (ids, scores to the bit, order) is the same. One
BLAS thread and glibc's mmap threshold fixed (``cap_heap_retention``), as the engine runs:
``--heap glibc`` leaves glibc's own (a query's arrays of a MiB or more then come from
the heap, not from pages mapped and zeroed afresh).

    python -m bench.vector_pick [--rows 1000000] [--queries 300] [--sample X.npy] [--heap glibc]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from bench.stats import machine_state, summary, table
from engine.lab import ExactIndex, MemoryVectors, StoreConfig, cap_heap_retention, score_rows


def query_before(index: ExactIndex, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    """``ExactIndex.query`` with a prefilter as it was (main at e8dfb37; an index without
    a side block): an argpartition of every coarse score, then of the refine's, and the
    float16 rows cast by ``astype``."""
    q = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm:
        q = q / norm
    n = index._n
    assert index._basis is not None and not index.side_rows
    qb = q @ index._basis
    first = index._first
    coarse = score_rows(index._proj[:n], qb[:first])
    cand = np.argpartition(coarse, n - index._candidates)[n - index._candidates:]
    if index._refine and first < len(qb) and index._refine < len(cand):
        finer = coarse[cand] + score_rows(index._fine[cand], qb[first:])
        cand = cand[np.argpartition(finer, len(cand) - index._refine)
                    [len(cand) - index._refine:]]
    cand = np.sort(cand)
    rows, ids = index._mat[cand], index._ids[cand]
    scores = score_rows(rows.astype(np.float32, copy=False), q)
    total = len(cand)
    kth = np.partition(scores, total - k)[total - k]
    keep = np.nonzero(scores >= kth)[0]
    order = keep[np.lexsort((ids[keep], -scores[keep]))][:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def vectors_and_queries(sample: str | None, queries: int) -> tuple[np.ndarray, np.ndarray]:
    if sample is None:
        from bench.memory_index import real_vectors

        x, q = real_vectors(22000)
    else:
        x = np.load(sample).astype(np.float32)
        q = x[:queries] + np.random.default_rng(3).standard_normal(
            (min(queries, len(x)), x.shape[1])).astype(np.float32) * 0.05
    return x, (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)[:queries]


def run(rows: int, queries: int, sample: str | None) -> tuple[list[list[Any]], str]:
    from bench.memory_index import grown

    x, q = vectors_and_queries(sample, queries)
    mat = grown(x, rows)
    store = MemoryVectors(mat.shape[1], lambda _sid: [], StoreConfig())
    store.load(np.arange(rows), mat, unit=True)
    del mat
    store.warm()
    index = store._index
    arms = {"before: argpartition of every coarse score":
            lambda v: query_before(index, v, 50),
            "after: sampled threshold (select.cut)": lambda v: index.query(v, 50)}
    wall: dict[str, list[float]] = {a: [] for a in arms}
    cpu: dict[str, list[float]] = {a: [] for a in arms}
    same = True
    for i, v in enumerate(q):
        got = []
        for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
            t, c = time.perf_counter(), time.thread_time()
            got.append(arms[name](v))
            cpu[name].append((time.thread_time() - c) * 1000)
            wall[name].append((time.perf_counter() - t) * 1000)
        same &= got[0] == got[1]
    out = []
    for name in arms:
        ws, cs = summary(wall[name]), summary(cpu[name])
        out.append([name, int(ws["n"]), round(ws["p50"], 2), round(ws["p95"], 2),
                    round(cs["p50"], 2), round(cs["p95"], 2)])
    kind = "float16" if index.compact else "float32"
    return out, (f"index: {len(index):,} {kind} rows x {index.dim}, "
                 f"{index._candidates:,} candidates, {index._refine:,} refined; "
                 f"same answers (ids, scores to the bit, order): {same}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--sample", help="an .npy of vectors to grow from (default: MiniLM's)")
    ap.add_argument("--heap", choices=("engine", "glibc"), default="engine",
                    help="glibc's mmap threshold as the engine fixes it, or glibc's own")
    args = ap.parse_args(argv)
    if args.heap == "engine":
        cap_heap_retention()
    from threadpoolctl import threadpool_limits

    print(f"machine: {machine_state()}; heap: {args.heap}")
    with threadpool_limits(1, user_api="blas"):
        rows, note = run(args.rows, args.queries, args.sample)
    print(note)
    print(table(["pick", "queries", "wall p50 ms", "wall p95 ms", "CPU p50 ms",
                 "CPU p95 ms"], rows))
    print(f"machine: {machine_state()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
