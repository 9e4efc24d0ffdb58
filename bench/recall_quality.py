"""Recall quality: does ``recall`` find what a developer asks for, in their own words?

The shared sessions (../shared/data/transcripts) and the collected public ones
(``bench/data/transcripts``, or ../shared/data/transcripts-public once moved
there) are indexed once into a cached store (real MiniLM). Each question of
``bench/data/recall_questions.json`` (how they were written, the paraphrase rule
and the split are recorded in the file) is asked through:

- ``recall``: the product (``ContextEngine.recall(query, k=10)``; a hit is a chunk,
  ``recall.hit_unit``'s default);
- ``recall-turns``: the same with ``recall.hit_unit = "turn"`` (a hit is a turn);
- ``previous``: issue 26's first round, in the same run: chunk hits, its transcript
  weights (``PREVIOUS_TRANSCRIPT``) and one session expanded;
- ``BM25``: Okapi BM25 (k1 1.2, b 0.75) over the same stored chunks, nothing else;
- ``fused``: the keyword and vector lanes fused by RRF over the transcript kinds,
  which is what ``recall`` ranked with before issue 26 (``--methods``).

A hit answers when it comes from the question's session and its text holds one
of the question's evidence strings (case and whitespace ignored). Printed per
method: hit@1/5/10 and MRR@10 overall, paraphrased vs verbatim and per kind,
with 95% intervals from a bootstrap over sessions (questions of one session are
drawn together), and the paired difference of each method to ``recall``. A second
table says what a reader pays and sees: the mean tokens of the top 5 hits' texts,
and hit@5 when only each hit's excerpt counts (what the CLI and MCP print;
``recall``'s own excerpt, else ``present.excerpt`` of the chunk within
``recall.hit_excerpt_tokens``).

    python -m bench.recall_quality [--split dev|test|all] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import recall_scoring as rs
from bench import scifact_data as sd
from bench.models import vectors_tag

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
QUESTIONS = REPO / "bench" / "data" / "recall_questions.json"
# where the collected public sessions live: shared data once the lead moves them, else here
EXTRA = (SHARED / "transcripts-public", REPO / "bench" / "data" / "transcripts")
RECALL_KINDS = ("turn_pair", "thinking", "code", "tool")


def corpus_dirs() -> list[Path]:
    """The transcript folders to index: the shared sessions and the collected ones."""
    dirs = [SHARED / "transcripts"]
    extra = next((d for d in EXTRA if (d / "claude").is_dir()), None)
    if extra is not None:
        dirs.append(extra)
    return [d / sub for d in dirs for sub in ("claude", "codex") if (d / sub).is_dir()]


def code_tag() -> str:
    """A hash of the code and settings that make recall's chunks and their vectors
    (engine/recall, ``CTX__RECALL__*``): a change rebuilds the cached store."""
    h = hashlib.sha256()
    for p in sorted((REPO / "engine" / "recall").glob("*.py")):
        h.update(p.read_bytes())
    h.update(repr(sorted((k, v) for k, v in os.environ.items()
                         if k.startswith("CTX__RECALL__"))).encode())
    return h.hexdigest()[:10]


def prepare_store(embedder: Any, cache: Path, dirs: Sequence[Path]) -> tuple[Path, float]:
    """The cached store holding ``dirs`` (built on first use): (its path, seconds to index)."""
    from engine.facade import ContextEngine

    key = hashlib.sha256("|".join(str(d) for d in dirs).encode()).hexdigest()[:6]
    cached = cache / f"recall-q-{code_tag()}-{key}-{vectors_tag(embedder)}"
    if (cached / "READY").exists():
        return cached / "store", float((cached / "READY").read_text().split()[0])
    building = cached.with_name(cached.name + ".tmp")
    shutil.rmtree(building, ignore_errors=True)
    t = time.perf_counter()
    with ContextEngine.open(building / "store", embedder=embedder) as eng:
        eng.recall(index=[str(d) for d in dirs])
    seconds = time.perf_counter() - t
    (building / "READY").write_text(f"{seconds:.1f}\n")
    building.rename(cached)
    return cached / "store", seconds


Hit = tuple[str | None, str, str]  # (session, text, excerpt)
Ranker = Callable[[str], list[Hit]]  # query -> hits, best first


def _excerpts(eng: Any, q: str, hits: list[tuple[str | None, str]]) -> list[Hit]:
    """Chunk hits with the excerpt recall would show of each."""
    from engine.recall.present import excerpt

    budget = eng.rt.cfg.recall.hit_excerpt_tokens
    return [(s, t, excerpt(t, q, eng.rt.counter, budget)) for s, t in hits]


def recall_ranker(eng: Any) -> Ranker:
    def run(q: str) -> list[Hit]:
        hits = eng.recall(q, k=10).hits or ()
        return [(h.meta.get("session"), h.text, h.excerpt) for h in hits]
    return run


@contextlib.contextmanager
def settings(eng: Any, *, recall: dict[str, Any] | None = None,
             rerank: dict[str, Any] | None = None) -> Iterator[None]:
    """The engine's recall and rerank settings replaced for the calls made inside."""
    import dataclasses

    cfg = eng.rt.cfg
    eng.rt.cfg = dataclasses.replace(
        cfg, recall=dataclasses.replace(cfg.recall, **(recall or {})),
        rerank=dataclasses.replace(cfg.rerank, **(rerank or {})))
    try:
        yield
    finally:
        eng.rt.cfg = cfg


def configured_ranker(eng: Any, *, recall: dict[str, Any] | None = None,
                      rerank: dict[str, Any] | None = None) -> Ranker:
    """``recall`` on the same engine with some settings replaced for its calls."""
    def run(q: str) -> list[Hit]:
        with settings(eng, recall=recall, rerank=rerank):
            return recall_ranker(eng)(q)
    return run


# The transcript weights of issue 26's first round (the coordinate-ascent fit, one
# session expanded, chunk hits): "today's ranking" of round 2, asked in the same run.
PREVIOUS_TRANSCRIPT = {
    "fused": 0.8, "similarity": 3.0, "keyword": 1.0, "term_recall": 0.8, "intent": 0.3,
    "kind_turn": 0.3, "kind_thinking": -2.0, "kind_code": 0.5, "failure": 0.2,
    "ask_command": 0.1, "ask_code": 1.5, "session_similarity": 8.0, "session_fused": 0.8,
    "keyword_rank": -0.3}


def previous_ranker(eng: Any) -> Ranker:
    total = sum(w for w in PREVIOUS_TRANSCRIPT.values() if w > 0)
    profiles = {**eng.rt.cfg.rerank.profiles,
                "transcript": {k: w / total for k, w in PREVIOUS_TRANSCRIPT.items()}}
    return configured_ranker(eng, recall={"hit_unit": "chunk"},
                             rerank={"profiles": profiles, "session_expand": 1})


def fused_ranker(eng: Any) -> Ranker:
    """RRF of the keyword and vector lanes over the transcript kinds (recall before issue 26)."""
    from engine.flows.lanes import run_lanes
    from engine.store.vault import Filters

    def run(q: str) -> list[Hit]:
        res = run_lanes(eng.rt, q, filters=Filters(kinds=RECALL_KINDS),
                        depth=max(10, eng.rt.cfg.search.lane_depth))
        return _excerpts(eng, q, [(res.rows[cid].meta.get("session"), res.rows[cid].text)
                                  for cid, _, _ in res.fused[:10]])
    return run


def bm25_ranker(eng: Any) -> Ranker:
    """Okapi BM25 over every stored transcript chunk (its own index, built here)."""
    rows = eng.rt.vault._query(
        "SELECT text, session FROM chunks WHERE kind IN (?, ?, ?, ?)", RECALL_KINDS)
    index = rs.BM25([t for t, _ in rows])
    sessions = [s for _, s in rows]

    def run(q: str) -> list[Hit]:
        return _excerpts(eng, q, [(sessions[i], rows[i][0]) for i in index.top(q, 10)])
    return run


# What an agent's recall call shows: the MCP tool's defaults (ipc/mcp/server.py, k 8 and
# budget 2000); the engine sizes the hits' excerpts to fill the budget.
VIEW_K, VIEW_BUDGET = 8, 2000
VIEW_UNITS = {"recall": "chunk", "recall-turns": "turn"}


def agent_view(eng: Any, unit: str) -> Callable[[str], tuple[list[tuple[str | None, str]], int]]:
    """query -> (each shown hit's session and excerpt, the tokens the view takes)."""
    def run(q: str) -> tuple[list[tuple[str | None, str]], int]:
        with settings(eng, recall={"hit_unit": unit}):
            res = eng.recall(q, k=VIEW_K, budget=VIEW_BUDGET)
        return [(h.meta.get("session"), h.excerpt) for h in res.hits or ()], res.total_tokens
    return run


METHODS: dict[str, Callable[[Any], Ranker]] = {
    "recall": recall_ranker,
    "recall-turns": lambda eng: configured_ranker(eng, recall={"hit_unit": "turn"}),
    "previous": previous_ranker, "BM25": bm25_ranker, "fused": fused_ranker}


def session_ids(dirs: Sequence[Path]) -> dict[str, str]:
    """File stem -> the session id inside the file (what the chunks carry)."""
    from engine.recall.claude import parse_claude
    from engine.recall.codex import parse_codex

    out = {}
    for d in dirs:
        parse = parse_codex if d.name == "codex" else parse_claude
        for f in sorted(d.glob("*.jsonl")):
            out[f.stem] = parse(f).info.session_id
    return out


def load_questions(split: str, ids: dict[str, str]) -> list[dict[str, Any]]:
    """The split's questions, each with ``sid``: its session's id in the store."""
    qs = [q for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
          if split in ("all", q["split"])]
    missing = sorted({q["session"] for q in qs if q["session"] not in ids})
    if missing:  # the collected sessions are not in git: see bench/data/transcripts/SOURCES.md
        print(f"{len(missing)} sessions of the questions are not on this machine; their "
              f"questions are left out (first: {missing[0]})", file=sys.stderr)
    return [{**q, "sid": ids[q["session"]]} for q in qs if q["session"] in ids]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev",
                    help="questions to ask (test: only for the final figure)")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap draws")
    ap.add_argument("--json", help="also write the ranks and tables to this file")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=FILE",
                    help="also report the recall ranks of another run's --json (for example "
                         "the code before a change, run from its own tree), paired")
    args = ap.parse_args(argv)
    dirs = corpus_dirs()
    if not dirs:
        print(f"no transcripts under {SHARED}", file=sys.stderr)
        return 2
    sd.bench_env()
    from engine.facade import ContextEngine

    embedder = sd.make_embedder("minilm")
    args.store_cache.mkdir(parents=True, exist_ok=True)
    store, index_s = prepare_store(embedder, args.store_cache, dirs)
    questions = load_questions(args.split, session_ids(dirs))
    methods = [m for m in args.methods.split(",") if m]
    ranks: dict[str, list[int | None]] = {}
    seen: dict[str, list[int | None]] = {}  # ranks when only the excerpts count
    cost: dict[str, list[int]] = {}  # tokens of the top 5 hits' texts, per question
    views: dict[str, tuple[list[int | None], list[int]]] = {}  # what an agent's call shows
    with tempfile.TemporaryDirectory(prefix="ctx-recall-q-") as tmp:
        shutil.copytree(store, Path(tmp) / "store")
        with ContextEngine.open(Path(tmp) / "store", embedder=embedder) as eng:
            eng.warm_up(background=False)  # the same vector index for every question
            chunks = eng.rt.vault.chunk_count()
            for name in methods:
                rank = METHODS[name](eng)
                got = [rank(q["q"]) for q in questions]
                ranks[name] = [rs.first_answer([(s, t) for s, t, _ in hits], q["sid"],
                                               q["evidence"])
                               for q, hits in zip(questions, got, strict=True)]
                seen[name] = [rs.first_answer([(s, e) for s, _, e in hits], q["sid"],
                                              q["evidence"])
                              for q, hits in zip(questions, got, strict=True)]
                cost[name] = [sum(eng.rt.counter.count(t) for _, t, _ in hits[:5])
                              for hits in got]
                if name in VIEW_UNITS:
                    look = agent_view(eng, VIEW_UNITS[name])
                    shown = [look(q["q"]) for q in questions]
                    views[name] = ([rs.first_answer(v, q["sid"], q["evidence"])
                                    for q, (v, _) in zip(questions, shown, strict=True)],
                                   [t for _, t in shown])
    for spec in args.compare:
        name, _, path = spec.partition("=")
        other = json.loads(Path(path).read_text())
        if other["split"] != args.split:
            print(f"{path}: split {other['split']}, not {args.split}", file=sys.stderr)
            return 2
        ranks[name] = [other["ranks"]["recall"][q["id"]] for q in questions]
        methods.append(name)
    sessions = len({q["session"] for q in questions})
    print(f"\nRecall quality: {args.split} split, {len(questions)} questions over {sessions} "
          f"sessions; store of {len(dirs)} folders, {chunks} chunks (indexed in {index_s:.0f} s)")
    report = rs.report(questions, ranks, boot=args.boot)
    print(rs.render(report, methods))
    print("\nWhat a reader pays and sees (top 5): mean tokens of the hits' texts; hit@5 when "
          "only the excerpts count")
    print("| method | tokens | hit@5 (texts) | hit@5 (excerpts) |\n|---|---|---|---|")
    for name, spent in cost.items():
        print(f"| {name} | {sum(spent) / max(1, len(spent)):.0f} | "
              f"{rs.metrics(ranks[name])['hit@5']:.3f} | {rs.metrics(seen[name])['hit@5']:.3f} |")
    print(f"\nWhat an agent's recall call shows (k {VIEW_K}, budget {VIEW_BUDGET}: the MCP "
          "tool's defaults; excerpts sized by the engine to fill the budget)")
    print("| method | answered within the view | hit@5 (excerpts) | mean tokens |\n|---|---|---|---|")
    for name, (seen_ranks, spent) in views.items():
        answered = sum(r is not None for r in seen_ranks) / max(1, len(seen_ranks))
        print(f"| {name} | {answered:.3f} | {rs.metrics(seen_ranks)['hit@5']:.3f} | "
              f"{sum(spent) / max(1, len(spent)):.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"split": args.split, "chunks": chunks, "report": report,
             "ranks": {m: dict(zip([q["id"] for q in questions], r, strict=True))
                       for m, r in ranks.items()},
             "excerpt_ranks": {m: dict(zip([q["id"] for q in questions], r, strict=True))
                               for m, r in seen.items()},
             "tokens_top5": {m: c for m, c in cost.items()},
             "agent_view": {m: {"k": VIEW_K, "budget": VIEW_BUDGET,
                                "ranks": dict(zip([q["id"] for q in questions], r, strict=True)),
                                "tokens": t} for m, (r, t) in views.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
