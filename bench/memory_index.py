"""The memory backend (the default): how well its prefilter finds a full scan's hits, how
fast it answers, and how fast a store opens with it, against the embedded Chroma store.

Part 0, the A/B (``--ab 100000 500000 1000000``): the index as it was (float32 rows,
prefilter 64 dims x 4000 candidates) and ``MemoryVectors`` with the store's default
config, on the same vectors in one run: recall@50 against a float32 full scan,
p50/p95 and CPU per call (one BLAS thread, as the engine runs it), bytes held, build,
seal and open times, and a fresh process that opens the sealed snapshot and answers
one query (its time and peak RSS); ``--chroma-max N`` adds Chroma embedded (HNSW)
filled with the same vectors at the sizes up to N (slow to insert), and
``--chroma-http-max N`` a `chroma run` server on this machine reached through the
HTTP client (the store's ``http`` backend).

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

    python -m bench.memory_index [--ab 100000 1000000 [--chroma-max 100000]
                                  [--chroma-http-max 100000]]
                                 [--sizes 22000 100000] [--store DIR] [--opens 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("CTX_PASSPHRASE", "bench")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")

from bench.stats import machine_state, summary, table
from engine.lab import BASIS_SAMPLE, ExactIndex, principal_basis

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
    from engine.lab import EmbeddingConfig, encode_documents, make_embedder

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


def _truth(mat: np.ndarray, q: np.ndarray, k: int = 50) -> list[set[int]]:
    """Each query's ``k`` best rows by a float32 full scan (blocks of queries)."""
    out: list[set[int]] = []
    n = len(mat)
    for at in range(0, len(q), 50):
        scores = q[at:at + 50] @ mat.T
        out += [set(np.argpartition(s, n - k)[n - k:].tolist()) for s in scores]
    return out


def _measure(index: ExactIndex, q: np.ndarray, truth: list[set[int]]) -> dict[str, float]:
    """recall@50 against ``truth`` (rows are ids here), wall p50/p95 and CPU ms per call."""
    got, ms = [], []
    cpu = time.process_time()
    for v in q:
        t = time.perf_counter()
        hits = index.query(v, 50)
        ms.append((time.perf_counter() - t) * 1000)
        got.append({c for c, _ in hits})
    cpu_ms = (time.process_time() - cpu) * 1000 / len(q)
    s = summary(ms)
    rec = float(np.mean([len(a & b) / 50 for a, b in zip(got, truth, strict=True)]))
    return {"recall": rec, "p50": s["p50"], "p95": s["p95"], "cpu": cpu_ms}


def ab_rows(sizes: list[int], real: int, chroma_max: int, chroma_http_max: int = 0
            ) -> list[list[Any]]:
    """The index as it was (float32 rows, prefilter 64 dims x 4000 candidates: main at
    628d375 with its default config) and as it is (``MemoryVectors`` with the store's
    default config), in the same process: recall@50 against a float32 full scan, p50/p95,
    CPU per call, bytes held, build and sealed-snapshot save/open times."""
    from threadpoolctl import threadpool_limits

    from engine.lab import MemoryVectors, SnapshotFile, StoreConfig

    x, q = real_vectors(real)
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    cfg = StoreConfig()
    rows: list[list[Any]] = []
    for n in sizes:
        mat = grown(x, n)
        with threadpool_limits(2):
            truth = _truth(mat, q)
        with threadpool_limits(1):
            t = time.perf_counter()
            old = ExactIndex(mat.shape[1])
            old.load(np.arange(n), mat, unit=True)
            old.set_prefilter(principal_basis(old.sample(BASIS_SAMPLE), 64), 4000)
            built = time.perf_counter() - t
            m = _measure(old, q, truth)
            rows.append([n, "old: float32, 64 dims x 4000", f"{m['recall']:.4f}", m["p50"],
                         m["p95"], f"{m['cpu']:.1f}", f"{old.nbytes() / 2**20:.0f}",
                         f"{built:.1f}", "-", "-", "-", "-"])
            del old
            tmp = tempfile.mkdtemp(prefix="ctx-memory-index-")
            snap = SnapshotFile(Path(tmp) / "vectors.snap", b"b" * 32)
            ids = list(range(n))
            hashes = ["0" * 16] * n
            t = time.perf_counter()

            def fingerprints(ids: list[int] = ids, hashes: list[str] = hashes
                             ) -> tuple[list[int], list[str]]:
                return ids, hashes

            new = MemoryVectors(mat.shape[1], lambda _sid: [], cfg, snapshot=snap,
                                fingerprints=fingerprints,
                                version=lambda: 1)
            new.load(np.arange(n), mat, unit=True)
            new.warm()
            built = time.perf_counter() - t
            m = _measure(new._index, q, truth)
            t = time.perf_counter()
            new.save_snapshot()
            saved = time.perf_counter() - t
            del new
            fresh = _open_in_child(Path(tmp) / "vectors.snap", q[0])
            t = time.perf_counter()
            again = MemoryVectors(mat.shape[1], lambda _sid: [], cfg, snapshot=snap)
            sealed = again.read_snapshot()
            assert sealed is not None
            again.load(sealed.ids, sealed.vectors, unit=True, prefilter=sealed.prefilter)
            del sealed
            again.query(q[0], 50)
            opened = time.perf_counter() - t
            reopened = _measure(again._index, q[:50], truth[:50])["recall"]
            shutil.rmtree(tmp, ignore_errors=True)
            kind = "float16" if again._index.compact else "float32"
            rows.append([n, f"new: {kind}, 64+64 dims x {again.candidates_for(n)} > 2000",
                         f"{m['recall']:.4f}", m["p50"], m["p95"], f"{m['cpu']:.1f}",
                         f"{again._index.nbytes() / 2**20:.0f}", f"{built:.1f}",
                         f"{saved:.1f}", f"{opened:.2f} ({reopened:.3f})",
                         f"{fresh['first_s']:.2f} (read {fresh['read_s']:.2f})",
                         f"{fresh['peak_mb']:.0f} (+{fresh['peak_mb'] - fresh['base_mb']:.0f})"])
            del again
        if n <= chroma_max:
            rows.append(_chroma_row(n, mat, q, truth))
        if n <= chroma_http_max:
            rows.append(_chroma_row(n, mat, q, truth, server=True))
        del mat
        print(f"  {n} done, load {machine_state()}", flush=True)
    return rows


def _open_in_child(path: Path, query: np.ndarray) -> dict[str, float]:
    """A fresh process opens the sealed snapshot at ``path`` with the memory backend and
    answers one query: seconds to that first answer, its peak RSS and its RSS before."""
    import subprocess
    import sys

    qfile = path.with_name("query.npy")
    np.save(qfile, query)
    out = subprocess.run([sys.executable, "-m", "bench.memory_index", "--child-open",
                          str(path)], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def _hwm_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not carried over an exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_open(path: Path) -> None:
    from threadpoolctl import threadpool_limits

    from engine.lab import MemoryVectors, SnapshotFile, StoreConfig

    q = np.load(path.with_name("query.npy"))
    base = _hwm_mb()
    with threadpool_limits(1):
        t = time.perf_counter()
        vecs = MemoryVectors(len(q), lambda _sid: [], StoreConfig(),
                             snapshot=SnapshotFile(path, b"b" * 32))
        snap = vecs.read_snapshot()
        assert snap is not None
        read = time.perf_counter() - t
        vecs.load(snap.ids, snap.vectors, unit=True, prefilter=snap.prefilter)
        del snap
        vecs.query(q, 50)
        first = time.perf_counter() - t
    print(json.dumps({"first_s": first, "read_s": read, "peak_mb": _hwm_mb(),
                      "base_mb": base}))


def _chroma_row(n: int, mat: np.ndarray, q: np.ndarray, truth: list[set[int]],
                server: bool = False) -> list[Any]:
    """Chroma (HNSW, cosine, default settings but ef_search 64 as the store's), embedded or
    (``server``) a `chroma run` on this machine through the HTTP client, as the store's
    ``http`` backend reaches it, filled with the same vectors: its recall@50, p50/p95,
    the client's CPU per query, insert time."""
    import chromadb

    from bench.chroma_server import chroma_run
    from engine.lab import keep_offline

    keep_offline()
    settings = chromadb.config.Settings(anonymized_telemetry=False)
    with tempfile.TemporaryDirectory(prefix="ctx-memory-chroma-") as tmp, ExitStack() as stack:
        if server:
            port = stack.enter_context(chroma_run(Path(tmp) / "server"))
            client: Any = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
        else:
            client = chromadb.PersistentClient(path=tmp, settings=settings)
        col = client.create_collection("bench", metadata={
            "hnsw:space": "cosine", "hnsw:search_ef": 64})
        t = time.perf_counter()
        step = 5000
        for at in range(0, n, step):
            col.add(ids=[str(i) for i in range(at, min(n, at + step))],
                    embeddings=mat[at:at + step])
        built = time.perf_counter() - t
        got, ms = [], []
        cpu = time.process_time()
        for v in q:
            t = time.perf_counter()
            res = col.query(query_embeddings=[v], n_results=50, include=[])
            ms.append((time.perf_counter() - t) * 1000)
            got.append({int(i) for i in res["ids"][0]})
        cpu_ms = (time.process_time() - cpu) * 1000 / len(q)
    s = summary(ms)
    rec = float(np.mean([len(a & b) / 50 for a, b in zip(got, truth, strict=True)]))
    label = "Chroma `chroma run`, HTTP (HNSW, ef 64)" if server else "Chroma embedded (HNSW, ef 64)"
    return [n, label, f"{rec:.4f}", s["p50"], s["p95"], f"{cpu_ms:.1f}", "-", f"{built:.0f}",
            "-", "-", "-", "-"]


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
    from engine import Config, ContextEngine
    from engine.lab import FakeEmbedder

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
    ap.add_argument("--ab", type=int, nargs="*", default=[],
                    help="sizes for the A/B of the old and the new index (part 0)")
    ap.add_argument("--chroma-max", type=int, default=0,
                    help="also fill Chroma embedded at A/B sizes up to this (slow to insert)")
    ap.add_argument("--chroma-http-max", type=int, default=0,
                    help="also fill a `chroma run` server (HTTP) at A/B sizes up to this")
    ap.add_argument("--store", type=Path, help="a store to time opens on (part 2)")
    ap.add_argument("--opens", type=int, default=3)
    ap.add_argument("--child-open", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_open:
        child_open(args.child_open)
        return 0
    print(machine_state())
    if args.ab:
        print(table(["vectors", "index", "recall@50 vs full scan", "p50 ms", "p95 ms",
                     "CPU ms/call", "held MB", "build s", "seal s", "open s (recall)",
                     "new process: open to first answer s", "its peak RSS MB (+ over bare)"],
                    ab_rows(args.ab, args.real, args.chroma_max,
                            args.chroma_http_max)))
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
