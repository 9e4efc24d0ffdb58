"""Engine at scale: grow a cached store of N chunks, then time the whole path in a fresh process.

    nice python -m bench.engine_scale [--sizes 100000,500000,1000000] [--queries 60]
                                      [--cache /tmp/ctx-engine-scale] [--embedder fake|minilm]

1. **Store** (once per size and code version, cached under ``--cache``, outside the
   repo): documents made at run time by recombining paragraphs of the local corpus
   (``bench.corpus``), ingested through ``ContextEngine.ingest`` (the engine's
   writer and vault: a real encrypted store). Their vectors come from the fake
   (hashing) embedder, not the model: the lanes' cost depends on the index size,
   not on what vectors mean. The build rate (chunks/s) is printed.
2. **Measure** in a child process per size (so RSS is the engine process's own):
   open -> first answer, warm-up, then p50/p95 wall and CPU ms of build_context,
   search and recall (queries embedded by the model the store was opened with),
   and the child's peak RSS (ru_maxrss). The load (``uptime``) is printed with
   every table. Compare figures of one run, never across runs: the machine is shared.

Not yet covered (issue 35): vectors grown from MiniLM's covariance, transcript
sessions in the store, backup/restore times, delete of 10%.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.stats import machine_state, pct, table

VERSION = "1"
QUERIES = ["why did the tests fail", "how is the build configured", "error reading the file",
           "add a new endpoint", "fix the failing lint", "update the documentation",
           "parse the configuration file", "open the database connection"]


def paragraphs(limit: int = 4000) -> list[str]:
    from bench.corpus import corpus_files

    out: list[str] = []
    for path in corpus_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out += [p for p in text.split("\n\n") if 80 <= len(p) <= 1500]
        if len(out) >= limit:
            break
    return out


def write_docs(folder: Path, chunks: int, seed: int = 11) -> None:
    """Markdown files recombined from corpus paragraphs, about one chunk per section."""
    rng = random.Random(seed)
    paras = paragraphs()
    folder.mkdir(parents=True, exist_ok=True)
    per_file = 20
    for i in range(max(1, chunks // per_file)):
        parts = [f"# Note {i}\n"]
        for s in range(per_file):
            body = "\n\n".join(rng.choice(paras) for _ in range(3))
            parts.append(f"## Section {i}.{s}\n\n{body}\n")
        (folder / f"note{i:07d}.md").write_text("\n".join(parts), encoding="utf-8")


def store_dir(cache: Path, size: int, embedder: str) -> Path:
    key = hashlib.sha256(f"{VERSION}:{size}:{embedder}".encode()).hexdigest()[:10]
    return cache / f"store-{size}-{embedder}-{key}"


def build(cache: Path, size: int, embedder: str) -> tuple[Path, float | None]:
    """The cached store of about ``size`` chunks; its build rate (chunks/s) when built now."""
    from bench.models import embedding_config
    from engine.embedding.factory import make_embedder
    from engine.facade import ContextEngine

    store = store_dir(cache, size, embedder)
    if (store / "READY").exists():
        return store, None
    docs = cache / f"docs-{size}"
    write_docs(docs, size)
    eng = ContextEngine.open(store / "data", embedder=make_embedder(embedding_config(model=embedder)))
    t = time.perf_counter()
    eng.wait(eng.ingest(paths=[str(docs)]))
    seconds = time.perf_counter() - t
    n = eng.status().chunks
    eng.close()
    (store / "READY").write_text(json.dumps({"chunks": n, "seconds": seconds}))
    return store, n / seconds


def measure(store: Path, embedder: str, queries: int) -> dict[str, Any]:
    """In this process: open -> first answer, warm-up, p50/p95 per call, peak RSS."""
    from bench.models import embedding_config
    from engine.embedding.factory import make_embedder
    from engine.facade import ContextEngine

    model = make_embedder(embedding_config(model=embedder))
    qs = [QUERIES[i % len(QUERIES)] + f" {i}" for i in range(queries)]
    t = time.perf_counter()
    eng = ContextEngine.open(store / "data", embedder=model, create=False)
    opened = time.perf_counter() - t
    eng.build_context(qs[0], budget=1500)
    first = time.perf_counter() - t
    t = time.perf_counter()
    for q in QUERIES:
        eng.search(q, k=10)
    warm = time.perf_counter() - t
    calls = {"build_context": lambda q: eng.build_context(q, budget=1500),
             "search": lambda q: eng.search(q, k=10),
             "recall": lambda q: eng.recall(q)}
    out: dict[str, Any] = {"chunks": eng.status().chunks, "open_s": opened,
                           "first_answer_s": first, "warmup_s": warm}
    for name, call in calls.items():
        wall, cpu = [], []
        for q in qs:
            eng.rt._qcache.clear()
            t, c = time.perf_counter(), time.process_time()
            call(q)
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        out[name] = {"p50": pct(wall, 50), "p95": pct(wall, 95),
                     "cpu_p50": pct(cpu, 50), "cpu_p95": pct(cpu, 95)}
    eng.close()
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def measure_child(store: Path, embedder: str, queries: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.engine_scale", "--measure", str(store),
           "--embedder", embedder, "--queries", str(queries)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(size: int, rate: float | None, r: dict[str, Any], load: str) -> None:
    print(f"\n{size} target, {r['chunks']} chunks; build rate "
          f"{'cached' if rate is None else f'{rate:.0f} chunks/s'}; load {load}")
    print(f"open {r['open_s']:.2f} s, open -> first answer {r['first_answer_s']:.2f} s "
          f"(target <= 2 s), warm-up {r['warmup_s']:.2f} s, peak RSS {r['rss_mb']:.0f} MB "
          f"(target <= 2048 MB)")
    targets = {"build_context": 50.0, "recall": 100.0}
    print(table(["call", "p50 ms", "p95 ms", "cpu p50 ms", "cpu p95 ms", "target p95 ms"],
                [[k, r[k]["p50"], r[k]["p95"], r[k]["cpu_p50"], r[k]["cpu_p95"],
                  str(targets.get(k, "-"))] for k in ("build_context", "search", "recall")]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="100000,500000,1000000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--cache", default="/tmp/ctx-engine-scale")
    ap.add_argument("--embedder", default="fake", choices=("fake", "minilm"))
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.embedder, args.queries)))
        return 0
    cache = Path(args.cache)
    for size in (int(s) for s in args.sizes.split(",")):
        store, rate = build(cache, size, args.embedder)
        load = machine_state()
        report(size, rate, measure_child(store, args.embedder, args.queries), load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
