"""Start-up cost of keeping no vector on disk (``store.vector_backend = "memory"``).

The memory backend rebuilds an exact in-memory index from the encrypted vault at
every open. This prints, at 10k and 100k chunks: the open time of the memory
backend against the embedded Chroma store's (the baseline, measured in the same
run on the same vault), the vector lane's query latency on each, and the rate
of a naive rebuild into Chroma (what `ctx repair` pays).

The vault is filled directly (sources, chunks, cached 384-d unit vectors), so
the numbers are those of the store, not of chunking or a model.

    python -m bench.vector_rebuild_bench [--sizes 10000 100000] [--opens 3] [--queries 50]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("CTX_PASSPHRASE", "bench-passphrase")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from bench.stats import summary, table
from engine import Config, ContextEngine
from engine.lab import FakeEmbedder, chunk_key
from engine.lab import rebuild_vectors as rebuild

WORDS = ["tide", "harbour", "ferry", "ledger", "invoice", "budget", "garden", "tomato",
         "compiler", "kernel", "thread", "socket", "packet", "river", "mountain", "violin",
         "recipe", "pepper"]


def _config(backend: str) -> Config:
    return Config().with_overrides({"store": {"vector_backend": backend},
                                    "embedding": {"model": "fake"},
                                    "keys": {"scrypt_n": 1024}})


def fill(root: Path, n: int, per_source: int = 100) -> None:
    """A store of ``n`` chunks whose vectors sit in the vault's embedding cache."""
    emb = FakeEmbedder()
    ContextEngine.open(root, config=_config("memory"), embedder=emb).close()
    eng = ContextEngine.open(root, config=_config("memory"), embedder=emb)
    vault = eng.rt.vault
    key = chunk_key(emb.name)
    rng = np.random.default_rng(1)
    now = time.time()
    for start in range(0, n, per_source * 20):
        with vault.write() as c:
            for s in range(start, min(n, start + per_source * 20), per_source):
                sid = c.execute(
                    "INSERT INTO sources(uri, kind, title, fmt, content_hash, ingested_at, "
                    "n_chunks, tokens, state) VALUES (?, 'text', ?, 'text', ?, ?, ?, ?, 'ready')",
                    (f"text:bench-{s}", f"doc {s}", f"h{s}", now, per_source,
                     per_source * 60)).lastrowid
                rows, cache = [], []
                vecs = rng.standard_normal((per_source, emb.dim)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                for j in range(per_source):
                    text = " ".join(WORDS[(s + j * k) % len(WORDS)] for k in range(40)) \
                        + f" item {s + j}"
                    rows.append((sid, j, "text", "", text, 60, 0, None, f"c{s}-{j}", "{}"))
                    cache.append((key(f"doc {s}", "", "text", text), vecs[j].tobytes()))
                c.executemany("INSERT INTO chunks(source_id, ordinal, kind, heading, text, "
                              "tokens, start, time, content_hash, meta) "
                              "VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
                c.executemany("INSERT OR IGNORE INTO embed_cache VALUES (?, ?)", cache)
    eng.close()


def bench_size(n: int, opens: int, queries: int, work: Path, chroma_max: int
               ) -> list[list[object]]:
    root = work / f"store-{n}"
    t = time.perf_counter()
    fill(root, n)
    print(f"filled {n} chunks in {time.perf_counter() - t:.1f} s", flush=True)
    emb = FakeEmbedder()
    backends = ["memory"]
    rate = "-"
    if n <= chroma_max:
        # baseline: Chroma filled once (the naive rebuild `ctx repair` does), then reopened
        eng = ContextEngine.open(root, config=_config("embedded"), embedder=emb,
                                 auto_repair=False)
        t = time.perf_counter()
        rebuilt = rebuild(eng.rt.vault, eng.rt.vectors, emb)
        rate = f"{rebuilt['vectors'] / (time.perf_counter() - t):.0f}"
        eng.close()
        backends.insert(0, "embedded")
    rows: list[list[object]] = []
    qv = np.random.default_rng(2).standard_normal((queries, emb.dim)).astype(np.float32)
    for backend in backends:
        open_ms, query_ms = [], []
        for _ in range(opens):
            t = time.perf_counter()
            eng = ContextEngine.open(root, config=_config(backend), embedder=emb,
                                     auto_repair=False)
            open_ms.append((time.perf_counter() - t) * 1000)
            eng.rt.vectors.query(qv[0], 50)  # first query loads Chroma's index
            for q in qv:
                t = time.perf_counter()
                eng.rt.vectors.query(q, 50)
                query_ms.append((time.perf_counter() - t) * 1000)
            eng.close()
        o, q = summary(open_ms), summary(query_ms)
        rows.append([n, backend, o["p50"], o["p95"], q["p50"], q["p95"]])
    if len(rows) == 2:
        rows[0] += ["1.0x", rate]
        rows[1] += [f"{rows[1][2] / rows[0][2]:.1f}x", "-"]  # type: ignore[operator]
    else:
        rows[0] += ["(no baseline)", "-"]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--opens", type=int, default=3)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--chroma-max", type=int, default=1_000_000,
                    help="skip the Chroma baseline above this size (its rebuild is slow)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctx-rebuild-bench-"))
    rows: list[list[object]] = []
    try:
        for n in args.sizes:
            rows += bench_size(n, args.opens, args.queries, work, args.chroma_max)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(["chunks", "backend", "open p50 ms", "open p95 ms", "query p50 ms",
                 "query p95 ms", "open vs embedded", "chroma adds/s"], rows))


if __name__ == "__main__":
    main()
