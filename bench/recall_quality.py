"""Recall quality: does ``recall`` find what a developer asks for, in their own words?

The 111 sessions of ``../shared/data/transcripts`` (21) and
``../shared/data/transcripts-public`` (90 collected public sessions; provenance in
its SOURCES.md) are indexed once into a cached store (real MiniLM). Each question
of ``bench/data/recall_questions.json`` (how they were written, the paraphrase rule
and the split are recorded in the file) is asked through:

- ``recall``: the product (``ContextEngine.recall(query, k=10)``), asked from no
  project (no ``cwd``);
- ``recall-cwd``: the same asked from inside the question's project (``cwd`` = the
  session's working directory, as the CLI, the hook and MCP pass theirs);
- ``today``: the ranking of main before issue 31 (f214659: its transcript weights,
  issue 31's features off), on the same engine, in the same run;
- ``recall-turns``: ``recall.hit_unit = "turn"`` (a hit is a turn);
- ``BM25``: Okapi BM25 (k1 1.2, b 0.75) over the same stored chunks, nothing else;
- ``dense``: MiniLM cosine of the query to every stored chunk's vector, nothing else;
- ``fused``: the keyword and vector lanes fused by RRF over the transcript kinds.

The split is by session and was fixed before any tuning (issue 26): a question is in
``test`` when the first byte of sha256(its session name) is below 128, else ``dev``
(``split_of``). Tune on dev only; read test only for a final figure.

A hit answers when it comes from the question's session and its text holds one
of the question's evidence strings (case and whitespace ignored). Printed per
method: hit@1/5/10 and MRR@10 overall, paraphrased vs verbatim and per kind,
with 95% intervals from a bootstrap over sessions (questions of one session are
drawn together), and the paired difference of each method to ``recall``. The
agent-view table says whether the answer is in what an agent's MCP ``recall``
call shows (k 8, budget 2000: the excerpts as the engine sizes them).

Reusable pieces (recall-adapt's A/B): ``corpus_dirs``, ``prepare_store``,
``session_ids``/``session_infos``, ``load_questions``, ``open_bench`` (an engine on a
copy of the cached store and the split's questions), ``rank_all`` (the ranks of a
``Ranker`` over the questions), ``view_all`` (the agent view of the questions) and
``recall_scoring.report``.

    python -m bench.recall_quality [--split dev|test|all] [--questions FILE] [--json FILE]

``--questions`` reads another question file of the same schema (``bench/data/
recall_questions_b.json``: set B, dev sessions only); the split check holds for it too.
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
CORPORA = ("transcripts", "transcripts-public")  # under SHARED: 21 + 90 sessions


def corpus_dirs() -> list[Path]:
    """The transcript folders to index: the shared sessions and the collected ones."""
    return [SHARED / d / sub for d in CORPORA for sub in ("claude", "codex")
            if (SHARED / d / sub).is_dir()]


def split_of(session: str) -> str:
    """The split of a question about ``session`` (its file's stem), fixed before any
    tuning (issue 26): test when the first byte of sha256(session) is below 128."""
    return "test" if hashlib.sha256(session.encode()).digest()[0] < 128 else "dev"


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
    from engine import ContextEngine

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
Ranker = Callable[[dict[str, Any]], list[Hit]]  # question -> hits, best first


def _excerpts(eng: Any, q: str, hits: list[tuple[str | None, str]]) -> list[Hit]:
    """Chunk hits with the excerpt recall would show of each."""
    from engine.lab import excerpt

    budget = eng.rt.cfg.recall.hit_excerpt_tokens
    return [(s, t, excerpt(t, q, eng.rt.counter, budget)) for s, t in hits]


def recall_ranker(eng: Any, *, from_project: bool = False, **kw: Any) -> Ranker:
    """The product's ``recall(q, k=10)``; ``from_project``: asked from inside the
    question's project (``cwd`` = its session's working directory)."""
    def run(q: dict[str, Any]) -> list[Hit]:
        where = {"cwd": q.get("cwd")} if from_project and q.get("cwd") else {}
        hits = eng.recall(q["q"], k=10, **where, **kw).hits or ()
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
                      rerank: dict[str, Any] | None = None, from_project: bool = False
                      ) -> Ranker:
    """``recall`` on the same engine with some settings replaced for its calls."""
    inner = recall_ranker(eng, from_project=from_project)

    def run(q: dict[str, Any]) -> list[Hit]:
        with settings(eng, recall=recall, rerank=rerank):
            return inner(q)
    return run


# "Today's ranking": main at f214659, before issue 31 (its fitted transcript weights,
# one session expanded, chunk hits, no learned reader), asked on the same engine in the
# same run with issue 31's ranking features off (``today_settings``).
TODAY_TRANSCRIPT = {
    "fused": 1.677, "similarity": 6.199, "keyword": -0.231, "term_recall": 3.961,
    "kind_turn": -0.985, "kind_thinking": -1.105, "kind_code": 1.926, "kind_tool": 0.924,
    "failure": 1.518, "ask_failure": 0.621, "ask_command": 0.533, "ask_code": 2.98,
    "session_similarity": 7.18, "session_fused": 1.001, "session_top": 3.053,
    "turn_similarity": 3.611, "turn_keyword": 2.055, "turn_term_recall": 4.818,
    "turn_fused": -1.109, "reply_open": 2.779, "outcome": 1.131}


def today_settings(eng: Any) -> dict[str, Any]:
    """The recall and rerank settings that make ``recall`` rank as main did at f214659."""
    total = sum(w for w in TODAY_TRANSCRIPT.values() if w > 0)
    profiles = {**eng.rt.cfg.rerank.profiles,
                "transcript": {k: w / total for k, w in TODAY_TRANSCRIPT.items()}}
    import dataclasses

    # issue 31's turn roles (engine.retrieval.turn_roles) came after f214659: all off
    roles_off = dataclasses.replace(eng.rt.cfg.recall.turn_roles, ending_bonus=0.0,
                                    output_bonus=0.0, call_bonus=0.0, named_bonus=0.0,
                                    cause_bonus=0.0, shown_bonus=0.0,
                                    repeat_penalty=0.0, ask_weight=0.0)
    return {"recall": {"hit_unit": "chunk", "adapt": False, "turn_roles": roles_off,
                       "part_lines": False, "budget_fill": "none"},
            "rerank": {"profiles": profiles, "session_expand": 1, "project_expand": 1.0,
                       "session_words_expand": 0.0}}


def today_ranker(eng: Any) -> Ranker:
    return configured_ranker(eng, **today_settings(eng))


def transcript_rows(eng: Any) -> list[tuple[int, str, str | None]]:
    """Every stored transcript chunk: (id, text, session)."""
    return [(int(i), t, s) for i, t, s in eng.rt.vault._query(
        "SELECT c.id, c.text, c.session FROM chunks c JOIN sources s ON s.id = c.source_id "
        "WHERE s.kind = 'transcript' AND s.state = 'ready'")]


def fused_ranker(eng: Any) -> Ranker:
    """RRF of the keyword and vector lanes over transcript chunks (recall before issue 26)."""
    from engine.lab import Filters, run_lanes

    def run(q: dict[str, Any]) -> list[Hit]:
        res = run_lanes(eng.rt, q["q"], filters=Filters(kinds=("transcript",)),
                        depth=max(10, eng.rt.cfg.search.lane_depth))
        return _excerpts(eng, q["q"], [(res.rows[cid].meta.get("session"), res.rows[cid].text)
                                       for cid, _, _ in res.fused[:10]])
    return run


def bm25_ranker(eng: Any) -> Ranker:
    """Okapi BM25 over every stored transcript chunk (its own index, built here)."""
    rows = transcript_rows(eng)
    index = rs.BM25([t for _, t, _ in rows])

    def run(q: dict[str, Any]) -> list[Hit]:
        return _excerpts(eng, q["q"], [(rows[i][2], rows[i][1]) for i in index.top(q["q"], 10)])
    return run


def dense_ranker(eng: Any) -> Ranker:
    """MiniLM alone: the query's cosine to every stored transcript chunk's vector."""
    import numpy as np

    rows = transcript_rows(eng)
    found = eng.rt.vectors.vectors([i for i, _, _ in rows])
    rows = [r for r in rows if r[0] in found]
    matrix = np.stack([found[i] for i, _, _ in rows]).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def run(q: dict[str, Any]) -> list[Hit]:
        vec = np.asarray(eng.rt.embed_query(q["q"]), dtype=np.float32)
        top = np.argsort(-(matrix @ vec), kind="stable")[:10]
        return _excerpts(eng, q["q"], [(rows[i][2], rows[i][1]) for i in top])
    return run


# What an agent's recall call shows: the MCP tool's defaults (ipc/mcp/server.py, k 8 and
# budget 2000); the engine sizes the hits' excerpts to fill the budget.
VIEW_K, VIEW_BUDGET = 8, 2000
View = Callable[[dict[str, Any]], tuple[list[tuple[str | None, str]], int]]


def agent_view(eng: Any, *, from_project: bool = False, recall: dict[str, Any] | None = None,
               rerank: dict[str, Any] | None = None) -> View:
    """question -> (each shown hit's session and excerpt, the tokens the view takes)."""
    def run(q: dict[str, Any]) -> tuple[list[tuple[str | None, str]], int]:
        where = {"cwd": q.get("cwd")} if from_project and q.get("cwd") else {}
        with settings(eng, recall=recall, rerank=rerank):
            res = eng.recall(q["q"], k=VIEW_K, budget=VIEW_BUDGET, **where)
        return [(h.meta.get("session"), h.excerpt) for h in res.hits or ()], res.total_tokens
    return run


METHODS: dict[str, Callable[[Any], Ranker]] = {
    "recall": recall_ranker,
    "recall-cwd": lambda eng: recall_ranker(eng, from_project=True),
    "today": today_ranker,
    "recall-turns": lambda eng: configured_ranker(eng, recall={"hit_unit": "turn"}),
    "BM25": bm25_ranker, "dense": dense_ranker, "fused": fused_ranker}
DEFAULT_METHODS = ("recall", "recall-cwd", "today", "BM25", "dense")
VIEWS: dict[str, Callable[[Any], View]] = {
    "recall": agent_view,
    "recall-cwd": lambda eng: agent_view(eng, from_project=True),
    "today": lambda eng: agent_view(eng, **today_settings(eng)),
    "recall-turns": lambda eng: agent_view(eng, recall={"hit_unit": "turn"})}


def session_infos(dirs: Sequence[Path]) -> dict[str, Any]:
    """File stem -> the parsed session's info (its id, working directory, branch...)."""
    from engine.lab import parse_claude, parse_codex

    out = {}
    for d in dirs:
        parse = parse_codex if d.name == "codex" else parse_claude
        for f in sorted(d.glob("*.jsonl")):
            out[f.stem] = parse(f).info
    return out


def session_ids(dirs: Sequence[Path]) -> dict[str, str]:
    """File stem -> the session id inside the file (what the chunks carry)."""
    return {stem: info.session_id for stem, info in session_infos(dirs).items()}


def load_questions(split: str, infos: dict[str, Any], path: Path = QUESTIONS
                   ) -> list[dict[str, Any]]:
    """The split's questions of ``path`` (a file of ``QUESTIONS``' schema), each with
    ``sid`` (its session's id in the store) and ``cwd`` (the session's working directory:
    where a question about it is asked from by ``recall-cwd``). ``infos``:
    ``session_infos`` (or ``session_ids``: no ``cwd``)."""
    qs = [q for q in json.loads(path.read_text(encoding="utf-8"))["questions"]
          if split in ("all", q["split"])]
    for q in qs:
        if q["split"] != split_of(q["session"]):
            raise ValueError(f"{q['id']}: split {q['split']} is not split_of its session")
    missing = sorted({q["session"] for q in qs if q["session"] not in infos})
    if missing:
        raise FileNotFoundError(f"{len(missing)} sessions of the questions are not under "
                                f"{SHARED} (first: {missing[0]})")
    out = []
    for q in qs:
        info = infos[q["session"]]
        sid, cwd = (info, None) if isinstance(info, str) else (info.session_id, info.cwd)
        out.append({**q, "sid": sid, "cwd": cwd})
    return out


def rank_all(ranker: Ranker, questions: Sequence[dict[str, Any]]
             ) -> tuple[list[int | None], list[int | None], list[list[Hit]]]:
    """Each question's rank of its first answering hit by text and by excerpt (None:
    not in the top 10), and the hits."""
    got = [ranker(q) for q in questions]
    by_text = [rs.first_answer([(s, t) for s, t, _ in hits], q["sid"], q["evidence"])
               for q, hits in zip(questions, got, strict=True)]
    by_excerpt = [rs.first_answer([(s, e) for s, _, e in hits], q["sid"], q["evidence"])
                  for q, hits in zip(questions, got, strict=True)]
    return by_text, by_excerpt, got


def view_all(view: View, questions: Sequence[dict[str, Any]]
             ) -> tuple[list[int | None], list[int]]:
    """Each question's rank of the first shown hit that holds its answer (None: the
    view does not hold it), and the tokens each view takes."""
    shown = [view(q) for q in questions]
    return ([rs.first_answer(v, q["sid"], q["evidence"])
             for q, (v, _) in zip(questions, shown, strict=True)], [t for _, t in shown])


@contextlib.contextmanager
def open_bench(split: str, cache: Path, questions: Path = QUESTIONS
               ) -> Iterator[tuple[Any, list[dict[str, Any]], float]]:
    """An engine on a copy of the cached store of every session (built on first use)
    and the split's questions of ``questions``: (engine, questions, seconds the store
    took to index)."""
    sd.bench_env()
    from engine import ContextEngine

    dirs = corpus_dirs()
    if not dirs:
        raise FileNotFoundError(f"no transcripts under {SHARED}")
    asked = load_questions(split, session_infos(dirs), questions)  # before any build
    embedder = sd.make_embedder("minilm")
    cache.mkdir(parents=True, exist_ok=True)
    store, index_s = prepare_store(embedder, cache, dirs)
    with tempfile.TemporaryDirectory(prefix="ctx-recall-q-") as tmp:
        shutil.copytree(store, Path(tmp) / "store")
        with ContextEngine.open(Path(tmp) / "store", embedder=embedder) as eng:
            eng.warm_up(background=False)  # the same vector index for every question
            yield eng, asked, index_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev",
                    help="questions to ask (test: only for the final figure)")
    ap.add_argument("--questions", type=Path, default=QUESTIONS,
                    help="the question file (the schema of bench/data/recall_questions.json; "
                         "default: that file)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help=f"comma-separated, among {', '.join(METHODS)}")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap draws")
    ap.add_argument("--json", help="also write the ranks and tables to this file")
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=FILE",
                    help="also report the recall ranks of another run's --json (for example "
                         "the code before a change, run from its own tree), paired")
    args = ap.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        print(f"--methods: unknown {', '.join(unknown)}", file=sys.stderr)
        return 2
    ranks: dict[str, list[int | None]] = {}
    seen: dict[str, list[int | None]] = {}  # ranks when only the excerpts count
    cost: dict[str, list[int]] = {}  # tokens of the top 5 hits' texts, per question
    views: dict[str, tuple[list[int | None], list[int]]] = {}  # what an agent's call shows
    if not args.questions.is_file():
        print(f"--questions: no file {args.questions}", file=sys.stderr)
        return 2
    try:
        bench = open_bench(args.split, args.store_cache, args.questions)
        eng, questions, index_s = bench.__enter__()
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        chunks = eng.rt.vault.chunk_count()
        for name in methods:
            ranks[name], seen[name], got = rank_all(METHODS[name](eng), questions)
            cost[name] = [sum(eng.rt.counter.count(t) for _, t, _ in hits[:5]) for hits in got]
            if name in VIEWS:
                views[name] = view_all(VIEWS[name](eng), questions)
    finally:
        bench.__exit__(None, None, None)
    for spec in args.compare:
        name, _, path = spec.partition("=")
        other = json.loads(Path(path).read_text())
        if other["split"] != args.split:
            print(f"{path}: split {other['split']}, not {args.split}", file=sys.stderr)
            return 2
        if other.get("questions", QUESTIONS.name) != args.questions.name:
            print(f"{path}: questions {other.get('questions', QUESTIONS.name)}, not "
                  f"{args.questions.name}", file=sys.stderr)
            return 2
        ranks[name] = [other["ranks"]["recall"][q["id"]] for q in questions]
        methods.append(name)
    sessions = len({q["session"] for q in questions})
    print(f"\nRecall quality: {args.questions.name}, {args.split} split, {len(questions)} "
          f"questions over {sessions} "
          f"sessions; store of {len(corpus_dirs())} folders, {chunks} chunks (indexed in "
          f"{index_s:.0f} s); load {os.getloadavg()[0]:.1f}")
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
    print("| method | answered within the view [95% CI] | hit@5 (excerpts) | mean tokens |\n"
          "|---|---|---|---|")
    held = {name: [r if r is not None else None for r in v] for name, (v, _) in views.items()}
    view_rep = rs.report(questions, held, boot=args.boot) if held else {}
    for name, (seen_ranks, spent) in views.items():
        row = view_rep[name]["all"]
        print(f"| {name} | {row['hit@10']:.3f} [{row['hit@10 ci'][0]:.2f}, "
              f"{row['hit@10 ci'][1]:.2f}] | {row['hit@5']:.3f} | "
              f"{sum(spent) / max(1, len(spent)):.0f} |")
    if "recall" in view_rep:
        print("\nAgent view, paired: recall minus each (same session draws), 95% CI")
        print("| method | answered diff [CI] |\n|---|---|")
        for name in views:
            d = view_rep[name]["all"].get("recall-minus hit@10")
            if d:
                print(f"| {name} | {d[0]:+.3f} [{d[1]:+.2f}, {d[2]:+.2f}] |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"split": args.split, "questions": args.questions.name, "chunks": chunks, "report": report,
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
