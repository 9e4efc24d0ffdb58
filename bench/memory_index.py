"""The memory backend (the default): how well its prefilter finds a full scan's hits, how
fast it answers, and how fast a store opens with it, against the embedded Chroma store.

Part 1, recall and latency (``--real N``): real MiniLM vectors (SciFact abstracts,
LoCoMo turns, Python sources; cached under the temp dir), grown to each of
``--sizes`` with vectors drawn from their own mean and covariance; the queries are
SciFact train claims and snippets of the texts. For each prefilter setting
(``--dims``, ``--candidates``): recall@50 against a full scan and the query's p50/p95,
beside the full scan's, one BLAS thread as the engine runs it.

Part 2, start-up (``--store DIR``, e.g. a store grown by ``bench.stage_latency --build``):
the store opened with the embedded Chroma store (open, then warm-up: its vector
cache) and with the memory backend (the first open rebuilds the index from the
vault and seals it; later opens read the sealed snapshot; warm-up sets up the
prefilter), each ``--opens`` times on copies of DIR, and 50 queries of the vector
index alone.

    python -m bench.memory_index [--sizes 22000 100000] [--store DIR] [--opens 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("CTX_PASSPHRASE", "bench")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")

from bench.stats import machine_state, summary, table
from engine.store.exact_index import ExactIndex
from engine.store.memory_vectors import BASIS_SAMPLE, principal_basis

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
CACHE = Path(tempfile.gettempdir()) / "ctx-bench" / "memory-index"


def real_vectors(limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(texts' vectors, queries' vectors), MiniLM, cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    xs, qs = CACHE / f"texts-{limit}.npy", CACHE / f"queries-{limit}.npy"
    if xs.exists() and qs.exists():
        return np.load(xs), np.load(qs)
    from bench.corpus import corpus_files
    from engine.embedding.base import encode_documents
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder

    texts: list[str] = []
    with open(DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
        texts += [f"{d['title']}\n{d['text'][:1200]}" for d in map(json.loads, fh)]
    conv = json.loads((DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    for c in conv:
        for name, turns in c["conversation"].items():
            if name.startswith("session_") and isinstance(turns, list):
                texts += [f"{t.get('speaker')}: {t.get('text')}" for t in turns]
    files = list(corpus_files())
    random.Random(1).shuffle(files)
    for f in files:
        if len(texts) >= limit:
            break
        text = f.read_text(errors="ignore")
        texts += [text[i:i + 1200] for i in range(0, min(len(text), 6000), 1200)]
    texts = texts[:limit]
    with open(DATA / "scifact" / "queries_train.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh][:300]
    queries += [texts[i][:120] for i in random.Random(2).sample(range(len(texts)), 300)]
    model = make_embedder(EmbeddingConfig(model="minilm"))
    x = np.asarray(encode_documents(model, texts), dtype=np.float32)
    q = np.asarray(model.encode(queries), dtype=np.float32)
    np.save(xs, x)
    np.save(qs, q)
    return x, q


def grown(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` and vectors drawn from its mean and covariance, ``n`` rows, unit length."""
    if n <= len(x):
        out = x[:n].copy()
    else:
        rng = np.random.default_rng(0)
        ev, vecs = np.linalg.eigh(np.cov(x.T))
        extra = (rng.standard_normal((n - len(x), x.shape[1])) * np.sqrt(np.clip(ev, 0, None))
                 ) @ vecs.T + x.mean(0)
        out = np.vstack([x, extra]).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def recall_rows(sizes: list[int], dims: list[int], cands: list[int], real: int
                ) -> list[list[Any]]:
    from threadpoolctl import threadpool_limits

    x, q = real_vectors(real)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    rows: list[list[Any]] = []
    with threadpool_limits(1):
        for n in sizes:
            mat = grown(x, n)
            index = ExactIndex(mat.shape[1])
            index.load(np.arange(n), mat, unit=True)
            truth = [{c for c, _ in index.query(v, 50)} for v in q]
            full = _latency(index, q)
            rows.append([n, "full scan", "-", "1.000", full["p50"], full["p95"], "1.0x"])
            for m in dims:
                for c in cands:
                    index.set_prefilter(principal_basis(index.sample(BASIS_SAMPLE), m), c)
                    got = [{h for h, _ in index.query(v, 50)} for v in q]
                    rec = np.mean([len(a & b) / 50 for a, b in zip(got, truth, strict=True)])
                    lat = _latency(index, q)
                    rows.append([n, f"prefilter {m} dims", c, f"{rec:.4f}", lat["p50"],
                                 lat["p95"], f"{full['p50'] / lat['p50']:.1f}x"])
            index.set_prefilter(None, 0)
    return rows


def _latency(index: ExactIndex, q: np.ndarray) -> dict[str, float]:
    ms = []
    for v in q:
        t = time.perf_counter()
        index.query(v, 50)
        ms.append((time.perf_counter() - t) * 1000)
    return summary(ms)


def startup_rows(store: Path, opens: int) -> list[list[Any]]:
    from engine.config import Config
    from engine.embedding.fake import FakeEmbedder
    from engine.facade import ContextEngine

    rows: list[list[Any]] = []
    qv = np.random.default_rng(2).standard_normal((50, 384)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="ctx-memory-index-") as tmp:
        for backend, label in (("embedded", "embedded Chroma"), ("memory", "memory")):
            copy = Path(tmp) / backend
            shutil.copytree(store, copy)
            (copy / "vectors.snap").unlink(missing_ok=True)
            cfg = Config().with_overrides({"store": {"vector_backend": backend},
                                           "embedding": {"model": "fake"}})
            for i in range(opens):
                t = time.perf_counter()
                eng = ContextEngine.open(copy, config=cfg, embedder=FakeEmbedder())
                opened = time.perf_counter() - t
                t = time.perf_counter()
                eng.warm_up(background=False)
                warmed = time.perf_counter() - t
                eng.rt.vault.guard.wait()  # the vault's page check: queries measured after
                eng.rt.vectors.query(qv[0], 50)
                ms = []
                for v in qv:
                    t = time.perf_counter()
                    eng.rt.vectors.query(v, 50)
                    ms.append((time.perf_counter() - t) * 1000)
                n = eng.rt.vectors.count()
                t = time.perf_counter()
                eng.close()
                closed = time.perf_counter() - t
                how = ("rebuilt from the vault" if i == 0 else "sealed snapshot") \
                    if backend == "memory" else "Chroma"
                s = summary(ms)
                rows.append([label, n, how, f"{opened:.2f}", f"{warmed:.2f}", f"{closed:.2f}",
                             s["p50"], s["p95"]])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[22_000, 100_000])
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 96])
    ap.add_argument("--candidates", type=int, nargs="+", default=[2000, 4000])
    ap.add_argument("--real", type=int, default=22_000, help="real MiniLM vectors to embed")
    ap.add_argument("--store", type=Path, help="a store to time opens on (part 2)")
    ap.add_argument("--opens", type=int, default=3)
    args = ap.parse_args(argv)
    print(machine_state())
    if args.sizes:
        print(table(["vectors", "index", "candidates", "recall@50 vs full scan", "p50 ms",
                     "p95 ms", "p50 vs full scan"],
                    recall_rows(args.sizes, args.dims, args.candidates, args.real)))
        print(machine_state())
    if args.store:
        print(table(["backend", "vectors", "open", "open s", "warm-up s", "close s",
                     "index query p50 ms", "p95 ms"], startup_rows(args.store, args.opens)))
        print(machine_state())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
