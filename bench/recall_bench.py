"""Transcript indexing throughput and recall latency (issue: session-aware recall).

    python -m bench.recall_bench [--sessions 100] [--embedder minilm|fake] [--queries 20]
                                 [--compare] [--rounds 1]

1. Cold pass: the real sessions (the shared Claude Code and Codex transcripts and
   the collected public ones, ``bench.recall_quality.corpus_dirs``; every text new
   to the model) are indexed into a fresh store. Printed: sessions, chunks, chunks
   per session, seconds, sessions/min and the projected minutes for 1000 new
   sessions of the same average size (the target: under 30). The model's word
   pieces (what its steps computed, padding included, vs the texts' own) are
   counted from the texts each model call got, after the timed pass.
   ``--compare`` also runs the cold pass as indexing was before issue 11
   ("before": the model's steps take the texts in file order, tool chunks
   are embedded whole), in turns with the current one ("after"), ``--rounds`` times each, so that
   both see the same machine load; the table ends with after/before ratios.
2. Replicated pass: the same files copied, with fresh session ids, until there
   are ``--sessions`` sessions (``--chunks``: until the store holds about that many
   chunks), then indexed. Copies repeat texts, so the
   embedding cache serves them: this is the cost of everything but the model,
   per session, and so the model's share of the cold pass.
3. A sync over the unchanged folders (no embedding) and recall query latency, beside,
   in turns in the same run: recall with the keyword lane joining every matched row to
   test the kinds (before ``engine.store.vault.kind_share``), round 1's ranking, recall
   --auto and the fused lanes alone; each with its ratio to recall's.

The machine's load average is printed with every pass: compare figures of one
run (ratios), not across runs on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.models import embedding_config
from bench.stats import pct, table
from engine import SyncResult

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "transcripts"


def corpus() -> list[Path]:
    """The folders of real sessions: shared and collected (see bench.recall_quality)."""
    from bench.recall_quality import corpus_dirs

    return corpus_dirs()
QUERIES = ["why did the tests fail", "how was the build configured", "which command failed",
           "what did we decide about the session format", "error reading the file",
           "add a new endpoint", "fix the failing lint", "update the documentation"]
TARGET_MIN = 30.0  # the seed's target: 1000 sessions indexed in under 30 minutes
MAX_WORDPIECES = 256  # MiniLM's max_seq_length: longer texts are cut by the model


class Recording:
    """The model, recording the texts of every call (to count word pieces afterwards)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.encode(texts)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        from engine.lab import encode_documents

        self.calls.append(list(texts))
        return encode_documents(self.inner, texts)


def wordpieces(calls: list[list[str]]) -> tuple[int, int] | None:
    """(word pieces of the texts, word pieces computed with each call padded to its
    longest text), both cut at the model's maximum; None without MiniLM's tokenizer."""
    try:
        from tokenizers import Tokenizer

        from engine.lab import minilm_path

        tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    except Exception:  # noqa: BLE001 - the count is extra information
        return None
    tok.no_padding()
    tok.no_truncation()
    real = padded = 0
    for texts in calls:
        sizes = [min(MAX_WORDPIECES, len(e.ids))
                 for e in tok.encode_batch([t.strip() for t in texts])]
        real += sum(sizes)
        padded += max(sizes) * len(sizes) if sizes else 0
    return real, padded


@contextlib.contextmanager
def before_issue_11() -> Iterator[None]:
    """Indexing as it was before issue 11: the model's steps take the texts in file
    order (each step padded to its longest text), and tool chunks are embedded whole."""
    from engine.lab import Writer
    from engine.lab import recall_embedview as embedview

    by_length, chars = Writer._by_length, embedview.TOOL_EMBED_CHARS
    Writer._by_length = lambda self, texts, todo: todo  # type: ignore[method-assign]
    embedview.TOOL_EMBED_CHARS = None
    try:
        yield
    finally:
        Writer._by_length = by_length  # type: ignore[method-assign]
        embedview.TOOL_EMBED_CHARS = chars


def sessions_of(stats: SyncResult) -> int:
    return stats.full + stats.appended


def cold_pass(model: Any, work: Path, name: str) -> tuple[dict[str, Any], Any]:
    """Index the shared transcripts into a fresh store: (figures, the open engine)."""
    from engine import ContextEngine

    rec = Recording(model)
    eng = ContextEngine.open(work / f"store-{name}", embedder=rec)
    load = os.getloadavg()[0]
    t = time.perf_counter()
    stats = eng.sync([str(d) for d in corpus()])
    seconds = time.perf_counter() - t
    n = sessions_of(stats)
    rate = n / seconds * 60
    return {"pass": name, "sessions": n, "chunks": stats.chunks,
            "per_session": stats.chunks / n, "embedded": stats.embedded,
            "wp": wordpieces(rec.calls), "seconds": seconds, "rate": rate,
            "per_1000": 1000 / rate, "load": (load, os.getloadavg()[0])}, eng


def cold_row(r: dict[str, Any]) -> list[Any]:
    wp = r["wp"]
    return [f"cold: shared transcripts ({r['pass']})", r["sessions"], r["chunks"],
            r["per_session"], r["embedded"],
            f"{wp[0]} / {wp[1]}" if wp else "-", r["seconds"], r["rate"], r["per_1000"],
            f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"]


def replicate(srcs: Sequence[Path], dst: Path, sessions: int) -> int:
    from engine.lab import detect_agent, parse_claude, parse_codex

    files = sorted(f for src in srcs for f in src.rglob("*.jsonl"))
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
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--chunks", type=int,
                    help="replicate until the store holds about this many chunks")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--compare", action="store_true",
                    help="also run the cold pass as it was before issue 11, in turns")
    ap.add_argument("--rounds", type=int, default=1, help="cold passes of each kind")
    args = ap.parse_args(argv)
    if not corpus():
        print(f"transcripts not found at {SHARED}", file=sys.stderr)
        return 2
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = args.embedder
    from engine.lab import make_embedder

    model = make_embedder(embedding_config(model=args.embedder))
    model.encode(["warm up"] * 8)
    work = Path(tempfile.mkdtemp(prefix="ctx-recall-bench-"))
    print(f"\nIndexing ({args.embedder} embedder: {type(model).__name__}; "
          f"target: 1000 sessions in under {TARGET_MIN:.0f} min; {os.cpu_count()} cores)",
          flush=True)
    headers = ["pass", "sessions", "chunks", "chunks/session", "embedded",
               "word pieces (texts / computed)", "seconds", "sessions/min",
               "min per 1000 sessions", "load avg"]
    cold: list[dict[str, Any]] = []
    eng = None
    for _ in range(args.rounds):
        for name in (("before", "after") if args.compare else ("after",)):
            if eng is not None:
                eng.close()
            with before_issue_11() if name == "before" else contextlib.nullcontext():
                r, eng = cold_pass(model, work, f"{name}{len(cold)}")
            r["pass"] = name
            cold.append(r)
            print(f"  {r['pass']}: {r['seconds']:.1f} s, {r['rate']:.1f} sessions/min, "
                  f"load {r['load'][0]:.1f}-{r['load'][1]:.1f}", flush=True)
    assert eng is not None
    rows = [cold_row(r) for r in cold]
    after = [r for r in cold if r["pass"] == "after"]
    before = [r for r in cold if r["pass"] == "before"]
    n_cold = after[-1]["sessions"]
    cold_s = statistics.median(r["seconds"] for r in after)

    copies = work / "copies"
    target = args.sessions
    if args.chunks:  # sessions of the cold pass's average size, to about --chunks in all
        target = max(0, int((args.chunks - after[-1]["chunks"]) / after[-1]["per_session"]))
    made = replicate(corpus(), copies, target)
    load = os.getloadavg()[0]
    t = time.perf_counter()
    rep = eng.sync([str(copies)])
    rep_s = time.perf_counter() - t
    rows.append([f"replicated to {made} sessions (cached texts: all but the model)",
                 sessions_of(rep), rep.chunks, rep.chunks / made, rep.embedded, "-",
                 rep_s, made / rep_s * 60, 1000 / (made / rep_s * 60),
                 f"{load:.1f}-{os.getloadavg()[0]:.1f}"])
    print(table(headers, rows))
    rate = n_cold / cold_s * 60
    model_share = max(0.0, cold_s - rep_s / made * n_cold) / cold_s
    print(f"\nProjection (after, median of {len(after)}): {rate:.1f} sessions/min = "
          f"{1000 / rate:.1f} min per 1000 new sessions of {after[-1]['per_session']:.0f} "
          f"chunks each (target {TARGET_MIN:.0f} min: "
          f"{'met' if 1000 / rate < TARGET_MIN else 'NOT met'}); the model is "
          f"{model_share:.0%} of the cold pass")
    if before:
        b_s = statistics.median(r["seconds"] for r in before)
        print(f"after/before (medians, same run): time x{cold_s / b_s:.2f}, "
              f"sessions/min x{b_s / cold_s:.2f}")

    load = os.getloadavg()[0]
    t = time.perf_counter()
    again = eng.sync([*(str(d) for d in corpus()), str(copies)])
    idle_s = time.perf_counter() - t
    print(f"unchanged sync: {again.files} files, {again.embedded} embedded, "
          f"{idle_s:.2f} s ({idle_s / max(1, again.files) * 100 * 1000:.1f} ms per 100 "
          f"files; load {load:.1f})")

    from bench.recall_quality import QUESTIONS

    asks = [q["q"] for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
            if q["split"] == "dev"] or QUERIES  # dev questions only: test stays unread
    prev = "recall query, round 1's ranking (chunk hits, one session expanded)"
    joined = "recall query, every keyword row joined to test the kinds (before kind_share)"
    lat: dict[str, list[float]] = {"recall query": [], joined: [], prev: [],
                                   "recall --auto": [],
                                   "fused lanes only (recall before issue 26)": []}
    import dataclasses

    from engine.lab import Filters, run_lanes
    from engine.lab import vault_keyword_reads as vault_module

    cfg = eng.rt.cfg
    round1 = dataclasses.replace(cfg, recall=dataclasses.replace(cfg.recall, hit_unit="chunk"),
                                 rerank=dataclasses.replace(cfg.rerank, session_expand=1))

    eng.warm_up(background=False)  # the vector cache loaded: every query reads the same index
    kinds = Filters(kinds=("turn_pair", "thinking", "code", "tool"))
    for i in range(args.queries):
        q = asks[i % len(asks)]
        eng.rt._qcache.clear()
        t = time.perf_counter()
        eng.recall(q, k=10)
        lat["recall query"].append((time.perf_counter() - t) * 1000)
        eng.rt._qcache.clear()
        share, vault_module.OVERFETCH_MIN_SHARE = vault_module.OVERFETCH_MIN_SHARE, 2.0
        t = time.perf_counter()
        eng.recall(q, k=10)  # the keyword lane's kinds filter joined for every matched row
        lat[joined].append((time.perf_counter() - t) * 1000)
        vault_module.OVERFETCH_MIN_SHARE = share
        eng.rt._qcache.clear()
        eng.rt.cfg = round1
        t = time.perf_counter()
        eng.recall(q, k=10)
        lat[prev].append((time.perf_counter() - t) * 1000)
        eng.rt.cfg = cfg
        t = time.perf_counter()
        eng.recall(auto=True, project="cli", budget=4000, task=q)
        lat["recall --auto"].append((time.perf_counter() - t) * 1000)
        eng.rt._qcache.clear()
        t = time.perf_counter()
        run_lanes(eng.rt, q, filters=kinds, depth=max(10, eng.rt.cfg.search.lane_depth))
        lat["fused lanes only (recall before issue 26)"].append((time.perf_counter() - t) * 1000)
    print(f"\nRecall latency ({eng.status().chunks} chunks; load {os.getloadavg()[0]:.1f})")
    base = lat["recall query"]
    print(table(["call", "n", "p50 ms", "p95 ms", "p50 / recall's", "p95 / recall's"],
                [[k, len(v), pct(v, 50), pct(v, 95), pct(v, 50) / pct(base, 50),
                  pct(v, 95) / pct(base, 95)] for k, v in lat.items()]))
    eng.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
