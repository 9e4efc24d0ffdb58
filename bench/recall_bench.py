"""Transcript indexing throughput and recall latency (issue: session-aware recall).

    python -m bench.recall_bench [--sessions 1000] [--embedder minilm|fake] [--queries 100]

1. Cold pass: the shared Claude Code and Codex transcripts (every text new to
   the model) are indexed into a fresh store: sessions and chunks per minute.
2. Replicated pass: the same files copied, with fresh session ids, until there
   are ``--sessions`` sessions, then indexed. Copies repeat texts, so the
   embedding cache serves them: this measures everything but the model, and
   the table also projects the time for as many sessions of new text from (1).
3. A sync over the unchanged folders (no embedding) and recall query latency.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import pct, table

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "transcripts"
QUERIES = ["why did the tests fail", "how was the build configured", "which command failed",
           "what did we decide about the session format", "error reading the file",
           "add a new endpoint", "fix the failing lint", "update the documentation"]


def replicate(src: Path, dst: Path, sessions: int) -> int:
    from engine.recall.claude import parse_claude
    from engine.recall.codex import parse_codex
    from engine.recall.model import detect_agent

    files = sorted(src.rglob("*.jsonl"))
    ids = {}
    for f in files:
        agent = detect_agent(f)
        if agent:
            ids[f] = (parse_claude if agent == "claude" else parse_codex)(f).info.session_id
    made = 0
    copy = 0
    while made < sessions:
        for f, sid in ids.items():
            if made >= sessions:
                break
            text = f.read_text(encoding="utf-8")
            new = f"{sid[:-6]}{copy:06d}" if len(sid) > 8 else f"{sid}-{copy}"
            out = dst / f"copy{copy:04d}" / f.parent.name / f.name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text.replace(sid, new), encoding="utf-8")
            made += 1
        copy += 1
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args(argv)
    if not SHARED.exists():
        print(f"transcripts not found at {SHARED}", file=sys.stderr)
        return 2
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = args.embedder
    from engine.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder
    from engine.facade import ContextEngine

    model = make_embedder(EmbeddingConfig(model=args.embedder))
    work = Path(tempfile.mkdtemp(prefix="ctx-recall-bench-"))
    eng = ContextEngine.open(work / "store", embedder=model)
    rows = []
    t = time.perf_counter()
    cold = eng.sync([str(SHARED)])
    cold_s = time.perf_counter() - t
    n_cold = cold["files"]
    rows.append(["cold: shared transcripts", n_cold, cold["chunks"], cold["embedded"], cold_s,
                 n_cold / cold_s * 60, cold["chunks"] / cold_s * 60])

    copies = work / "copies"
    made = replicate(SHARED, copies, args.sessions)
    t = time.perf_counter()
    rep = eng.sync([str(copies)])
    rep_s = time.perf_counter() - t
    rows.append([f"replicated to {made} sessions (cached texts)", made, rep["chunks"],
                 rep["embedded"], rep_s, made / rep_s * 60, rep["chunks"] / rep_s * 60])
    per_session_model = max(0.0, cold_s - rep_s / made * n_cold) / n_cold
    projected = rep_s + per_session_model * made
    rows.append([f"projected: {made} sessions of new text", made, rep["chunks"], "-",
                 projected, made / projected * 60, rep["chunks"] / projected * 60])

    t = time.perf_counter()
    again = eng.sync([str(SHARED), str(copies)])
    idle_s = time.perf_counter() - t
    rows.append(["sync of unchanged folders", again["files"], again["chunks"], again["embedded"],
                 idle_s, "-", "-"])
    print(f"\nIndexing ({args.embedder} embedder; target: 1000 sessions in under 30 min)")
    print(table(["pass", "sessions", "chunks", "embedded", "seconds", "sessions/min",
                 "chunks/min"], rows))
    print(f"unchanged sync: {idle_s / max(1, again['files']) * 100 * 1000:.1f} ms per 100 files")

    lat = {"recall query": [], "recall --auto": []}
    for i in range(args.queries):
        q = QUERIES[i % len(QUERIES)]
        eng.rt._qcache.clear()
        t = time.perf_counter()
        eng.recall(q, k=10)
        lat["recall query"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        eng.recall(auto=True, project="spotter", budget=4000, task=q)
        lat["recall --auto"].append((time.perf_counter() - t) * 1000)
    print(f"\nRecall latency ({eng.status()['chunks']} chunks)")
    print(table(["call", "n", "p50 ms", "p95 ms"],
                [[k, len(v), pct(v, 50), pct(v, 95)] for k, v in lat.items()]))
    eng.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
