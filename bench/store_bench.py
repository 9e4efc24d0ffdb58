"""Ingest throughput and search latency per lane (issue: foundation benchmark).

    python -m bench.store_bench [--chunks 10000] [--big 100000] [--big-embedder fake|minilm]

1. Picks files of a real local corpus (Python sources and docs on this
   machine) until they make ``--chunks`` chunks.
2. Bare model: encodes exactly the texts the engine would embed, in the same
   process, and times it (chunks/s).
3. Ingest: the same files through ContextEngine (load, chunk, surrogates,
   embed, vault, Chroma) into a fresh store; chunks/s and the ratio to (2).
4. Latency per lane at that size (p50/p95 over --queries queries drawn from
   the corpus): query embedding, vector lane, keyword lane, fused search,
   build_context.
5. Grows a second store to ``--big`` chunks and measures the lanes again.
   With ``--big-embedder fake`` its vectors come from the hashing embedder
   (the lanes' cost depends on the index size, not on what vectors mean);
   search and build_context are then timed again with MiniLM embedding each
   query, end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import corpus_files
from bench.models import embedding_config
from bench.stats import summary, table

TARGETS_MS = {"vector lane": 5.0, "keyword lane": 10.0, "build_context": 50.0,
              "build_context, MiniLM query": 50.0}


def pick_files(target_chunks: int, skip: int = 0) -> tuple[list[Path], list[str]]:
    """Files (after the first ``skip``) whose chunks reach ``target_chunks``; their embed texts."""
    from engine import FileRejected, TokenCounter
    from engine.lab import ChunkingConfig, chunk_document, embed_text, load_file

    counter = TokenCounter.shared()
    cfg = ChunkingConfig()
    files: list[Path] = []
    texts: list[str] = []
    for i, path in enumerate(corpus_files()):
        if i < skip:
            continue
        try:
            doc = load_file(path)
        except FileRejected:
            continue
        chunks = chunk_document(doc, cfg, counter)
        files.append(path)
        texts += [embed_text(doc.title, c.heading, c.kind, c.text) for c in chunks]
        if len(texts) >= target_chunks:
            break
    return files, texts


def make_queries(texts: list[str], n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
    out: list[str] = []
    while len(out) < n:
        found = words.findall(rng.choice(texts))
        if len(found) >= 6:
            start = rng.randrange(0, max(1, len(found) - 6))
            out.append(" ".join(found[start:start + rng.randint(3, 8)]))
    return out


def ingest(engine: Any, files: list[Path]) -> tuple[float, Any]:
    t = time.perf_counter()
    snap = engine.wait(engine.ingest(paths=[str(f) for f in files]))
    return time.perf_counter() - t, snap


def lane_latency(engine: Any, queries: list[str], rounds: int = 1) -> dict[str, dict[str, float]]:
    from engine.lab import Filters, analyze_query, keyword_lane

    rt = engine.rt
    lanes: dict[str, list[float]] = {k: [] for k in (
        "query embedding", "vector store query", "vector lane", "keyword lane", "search (fused)",
        "build_context")}
    empty = Filters()
    for q in queries[:5]:  # warm caches and the model
        engine.search(q, k=10)
    for _ in range(rounds):
        for q in queries:
            rt._qcache.clear()
            t = time.perf_counter()
            vec = rt.embedder.encode([q])[0]
            lanes["query embedding"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            rt.vectors.query(vec, 50)
            lanes["vector store query"].append((time.perf_counter() - t) * 1000)
            rt._qcache.clear()
            t = time.perf_counter()
            rt.vectors.query(rt.embed_query(q), 50)
            lanes["vector lane"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            keyword_lane(rt, analyze_query(q, rt.cfg.query), 50, empty, rt.cfg)
            lanes["keyword lane"].append((time.perf_counter() - t) * 1000)
            rt._qcache.clear()
            t = time.perf_counter()
            engine.search(q, k=10)
            lanes["search (fused)"].append((time.perf_counter() - t) * 1000)
            rt._qcache.clear()
            t = time.perf_counter()
            engine.build_context(q, budget=1500)
            lanes["build_context"].append((time.perf_counter() - t) * 1000)
    return {k: summary(v) for k, v in lanes.items()}


def print_latency(title: str, result: dict[str, dict[str, float]], chunks: int) -> None:
    print(f"\n{title} ({chunks} chunks)")
    rows = []
    for name, s in result.items():
        target = TARGETS_MS.get(name)
        rows.append([name, s["n"], s["p50"], s["p95"],
                     f"{target:.0f}" if target else "-",
                     f"{s['p95'] / target:.2f}x" if target else "-"])
    print(table(["lane", "calls", "p50 ms", "p95 ms", "target p95 ms", "p95 / target"], rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--big-embedder", default="fake", choices=("fake", "minilm"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--big-only", action="store_true",
                    help="skip steps 1-4; time MiniLM query embedding on its own instead")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = "minilm"
    from engine.lab import make_embedder

    model = make_embedder(embedding_config(model="minilm"))
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="ctx-bench-"))
    files, texts = pick_files(args.chunks)
    print(f"corpus: {len(files)} files, {len(texts)} chunks (Python sources and docs)")
    queries = make_queries(texts, args.queries)

    if args.big_only:
        times = []
        for q in queries:
            t = time.perf_counter()
            model.encode([q])
            times.append((time.perf_counter() - t) * 1000)
        small = {"query embedding": summary(times)}
    else:
        small = compare_and_measure(model, files, texts, queries, work, results)
    if args.big:
        measure_big(args, model, queries, small, work, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float))
    print(f"\nmachine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    return 0


def compare_and_measure(model: Any, files: list[Path], texts: list[str], queries: list[str],
                        work: Path, results: dict[str, Any]) -> dict[str, dict[str, float]]:
    from engine import ContextEngine

    t = time.perf_counter()
    model.encode(texts)
    bare_s = time.perf_counter() - t
    engine = ContextEngine.open(work / "small", embedder=model)
    ingest_s, snap = ingest(engine, files)
    chunks = engine.status().chunks
    bare_rate, ingest_rate = len(texts) / bare_s, chunks / ingest_s
    results["ingest"] = {"chunks": chunks, "bare_chunks_per_s": bare_rate,
                         "ingest_chunks_per_s": ingest_rate, "ratio": ingest_rate / bare_rate,
                         "errors": len(snap.errors)}
    print("\nIngest throughput (same chunks, same process)")
    print(table(["what", "chunks", "seconds", "chunks/s", "ratio"], [
        ["bare model encode", len(texts), bare_s, bare_rate, "1.00"],
        ["ctx ingest (load, chunk, surrogates, embed, vault, Chroma)", chunks, ingest_s,
         ingest_rate, f"{ingest_rate / bare_rate:.2f} (target >= 0.80)"]]))
    small = lane_latency(engine, queries)
    results["small"] = {"chunks": chunks, "lanes": small}
    print_latency("Search latency", small, chunks)
    engine.close()
    return small


def measure_big(args: argparse.Namespace, model: Any, queries: list[str],
                small: dict[str, dict[str, float]], work: Path, results: dict[str, Any]) -> None:
    from engine import ContextEngine
    from engine.lab import make_embedder

    os.environ["CTX_EMBEDDER"] = args.big_embedder
    big_model = model if args.big_embedder == "minilm" else make_embedder(
        embedding_config(model="fake"))
    big = ContextEngine.open(work / "big", embedder=big_model)
    big_files, _ = pick_files(args.big)
    t = time.perf_counter()
    ingest(big, big_files)
    fill_s = time.perf_counter() - t
    n = big.status().chunks
    print(f"\nbig store: {n} chunks ingested in {fill_s:.0f} s with the "
          f"{args.big_embedder} embedder")
    lanes = lane_latency(big, queries)
    if args.big_embedder == "fake":
        lanes.update(with_real_queries(big, model, queries))
    results["big"] = {"chunks": n, "embedder": args.big_embedder, "lanes": lanes}
    print_latency("Search latency", lanes, n)
    big.close()


class QueryModel:
    """MiniLM under the store's (fake) model name, so that build_context still finds the
    stored vectors of its candidates while every query is embedded by the real model."""

    def __init__(self, name: str, dim: int, model: Any) -> None:
        self.name, self.dim, self._model = name, dim, model

    def encode(self, texts: list[str]) -> Any:
        return self._model.encode(texts)


def with_real_queries(engine: Any, model: Any, queries: list[str]
                      ) -> dict[str, dict[str, float]]:
    """search and build_context with MiniLM embedding every query (no query cache)."""
    rt = engine.rt
    fake = rt.embedder
    rt.embedder = QueryModel(fake.name, fake.dim, model)
    calls = {"search (fused), MiniLM query": lambda x: engine.search(x, k=10),
             "build_context, MiniLM query": lambda x: engine.build_context(x, budget=1500)}
    out: dict[str, list[float]] = {k: [] for k in calls}
    try:
        for q in queries[:5]:
            engine.build_context(q, budget=1500)
        for q in queries:
            for key, call in calls.items():
                rt._qcache.clear()
                t = time.perf_counter()
                call(q)
                out[key].append((time.perf_counter() - t) * 1000)
    finally:
        rt.embedder = fake
        rt._qcache.clear()
    return {k: summary(v) for k, v in out.items()}


if __name__ == "__main__":
    sys.exit(main())
