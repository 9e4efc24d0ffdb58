"""Transcripts: does recall find the turn that answers a question about a past session?

The shared Claude Code and Codex sessions (../shared/data/transcripts) are
indexed once into a cached store (``recall(index=...)``, real MiniLM). Each
question of ``bench/data/transcript_questions.json`` (written by hand; how is
recorded in the file) is asked three ways over the same store:

- ``recall``: the product's recall path (``ContextEngine.recall(query, k=10)``);
- ``ctx search``: ``search`` over the transcript chunk kinds (the ranking by kind);
- ``RRF``: the keyword and vector lanes fused by RRF, nothing else.

A hit answers when its text holds one of the question's answer strings (case
and whitespace ignored). Printed: hit@5 (the relevance figure: the share of
questions answered in the top 5), hit@10 and MRR@10, per method.

    python -m bench.transcripts_recall [--store-cache DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import scifact_data as sd
from bench.models import vectors_tag

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "transcripts"
QUESTIONS = Path(__file__).resolve().parent / "data" / "transcript_questions.json"
CACHE_VERSION = "2"  # 2: tool chunks embedded by their result (engine/recall/embedview.py)
_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def first_answer(texts: Sequence[str], answers: Sequence[str]) -> int | None:
    """1-based rank of the first text holding an answer; None when none does."""
    keys = [norm(a) for a in answers]
    for i, t in enumerate(texts, start=1):
        body = norm(t)
        if any(k in body for k in keys):
            return i
    return None


def prepare_store(embedder: Any, cache: Path) -> tuple[Path, float]:
    from engine import ContextEngine

    cached = cache / f"transcripts-v{CACHE_VERSION}-{vectors_tag(embedder)}"
    if (cached / "READY").exists():
        return cached / "store", float((cached / "READY").read_text().split()[0])
    building = cached.with_name(cached.name + ".tmp")
    shutil.rmtree(building, ignore_errors=True)
    t = time.perf_counter()
    with ContextEngine.open(building / "store", embedder=embedder) as eng:
        eng.recall(index=[str(DATA / "claude"), str(DATA / "codex")])
    seconds = time.perf_counter() - t
    (building / "READY").write_text(f"{seconds:.1f}\n")
    building.rename(cached)
    return cached / "store", seconds


def evaluate(eng: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    from engine.lab import RECALL_CHUNK_KINDS, Filters, run_lanes

    ranks: dict[str, list[int | None]] = {"recall": [], "ctx search": [], "RRF": []}
    for q in questions:
        got = eng.recall(q["q"], k=10)
        ranks["recall"].append(first_answer([h.text for h in got.hits or ()],
                                            q["answers"]))
        hits = eng.search(q["q"], k=10, kinds=list(RECALL_CHUNK_KINDS))
        ranks["ctx search"].append(first_answer([h.text for h in hits], q["answers"]))
        res = run_lanes(eng.rt, q["q"], filters=Filters(kinds=RECALL_CHUNK_KINDS),
                        depth=max(10, eng.rt.cfg.search.lane_depth))
        ranks["RRF"].append(first_answer([res.rows[c].text for c, _, _ in res.fused[:10]],
                                         q["answers"]))
    out = {}
    for name, rs in ranks.items():
        out[name] = {"hit@5": statistics.mean(r is not None and r <= 5 for r in rs),
                     "hit@10": statistics.mean(r is not None for r in rs),
                     "mrr@10": statistics.mean(1.0 / r if r else 0.0 for r in rs),
                     "missed": [q["q"] for q, r in zip(questions, rs, strict=True) if r is None]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"transcripts not found at {DATA}", file=sys.stderr)
        return 2
    sd.bench_env()
    from engine import ContextEngine

    embedder = sd.make_embedder("minilm")
    args.store_cache.mkdir(parents=True, exist_ok=True)
    store, ingest_s = prepare_store(embedder, args.store_cache)
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    with tempfile.TemporaryDirectory(prefix="ctx-transcripts-") as tmp:
        shutil.copytree(store, Path(tmp) / "store")
        with ContextEngine.open(Path(tmp) / "store", embedder=embedder) as eng:
            chunks = eng.rt.vault.chunk_count()
            rep = evaluate(eng, questions)
    print(f"\nTranscripts recall ({len(questions)} questions, {chunks} chunks, "
          f"index {ingest_s:.0f} s)")
    print("| method | hit@5 (relevance) | hit@10 | MRR@10 |")
    print("|---|---|---|---|")
    for name, row in rep.items():
        print(f"| {name} | {row['hit@5']:.3f} | {row['hit@10']:.3f} | {row['mrr@10']:.3f} |")
    for name, row in rep.items():
        if row["missed"]:
            print(f"{name} missed {len(row['missed'])}: " + "; ".join(row["missed"]))
    if args.json:
        Path(args.json).write_text(json.dumps({**rep, "chunks": chunks}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
