"""Fit the rerank's per-kind weights (``engine.retrieval.profiles``) on training splits.

Two steps, both reproducible:

1. dump: for every training question, run the store's lanes as build_context
   does and record every rerank feature of the fused window (``rank_hits`` with
   ``all_features``) with its label. Documents: SciFact train claims over the
   cached SciFact store (label: the chunk's document is cited by the claim).
   Conversations: LoCoMo dev questions, categories 1-4, over the cached
   per-conversation stores (label: the chunk is an evidence turn). LoCoMo test
   is never read.
2. fit: coordinate ascent over a grid of weights, from the current defaults,
   maximizing nDCG@10 of documents (SciFact) or the mean of evidence recall@10
   and @25 (LoCoMo dev); then each feature is dropped in turn when dropping it
   costs less than ``--drop-below`` of the objective (features that do not pay).

Transcripts are asked the dev split of one or more question files (``--questions A,B``:
``bench.recall_quality``'s sets; a chunk answers as a hit there does), fitted together,
cross-validated by session across the files (``--cv``), each file's figures also apart.

    python -m bench.fit_rank [--store-cache DIR] [--scifact-docs N] [--questions A,B] [--out FILE]

The dumps are kept under the store cache, so a second run only fits. The
result (weights, objective before/after, splits, sizes) goes to ``--out``
(default ``bench/data/rank_fit.json``); the weights are then copied into
``engine/retrieval/profiles.py`` by hand, where the file is cited.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import scifact_data as sd
from engine.lab import FEATURES

FIT_FEATURES = FEATURES  # every feature the rerank computes is free to enter
GRID = (-2.0, -1.0, -0.5, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0,
        8.0)
OUT = Path(__file__).resolve().parent / "data" / "rank_fit.json"

Query = list[tuple[str, int, dict[str, float]]]  # (group key, label, features) per candidate


def _dump_store(eng: Any, questions: Sequence[tuple[str, Callable[[Any], tuple[str, int]]]],
                filters: Any = None, expand: bool = False) -> list[Query]:
    import dataclasses

    from engine.lab import expand_sessions, rank_hits, run_lanes

    rt = eng.rt
    out = []
    for text, label_of in questions:
        res = run_lanes(rt, text, filters=filters)
        cfg = rt.cfg
        if expand:  # as search does for recall: the best sessions' chunks join the window
            res, added = expand_sessions(rt, cfg, res, filters)
            cfg = dataclasses.replace(cfg, rerank=dataclasses.replace(
                cfg.rerank, window=cfg.rerank.window + added))
        ranked = rank_hits(rt, cfg, res, all_features=True).ranked[: cfg.rerank.window]
        # in fused order: the window's order under the current weights must not leak into
        # the fit (all-zero weights would otherwise replay them)
        ranked = sorted(ranked, key=lambda r: -r[2].get("fused", 0.0))
        rows = []
        for cid, _, feats in ranked:
            key, label = label_of(res.rows[cid])
            rows.append((key, label, {f: round(v, 5) for f, v in feats.items()}))
        out.append(rows)
    return out


def dump_scifact(cache: Path, docs: int | None, claims: int | None,
                 store_path: Path | None = None) -> dict[str, Any]:
    from engine import ContextEngine

    embedder = sd.make_embedder("minilm")
    store = store_path or sd.prepare_store(embedder, cache, docs)[0]
    qrels = sd.qrels()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(store, Path(tmp) / "s")
        with ContextEngine.open(Path(tmp) / "s", embedder=embedder) as eng:
            fair = sd.covered_claims(eng, qrels)
            questions, n_rel = [], []
            for qid, text in sd.queries().items():
                rel = qrels.get(qid)
                if rel and qid in fair:
                    questions.append((text, lambda row, rel=rel: (
                        (d := sd.doc_id(row.source) or ""), int(d in rel))))
                    n_rel.append(len(rel))
            if claims:
                questions, n_rel = questions[:claims], n_rel[:claims]
            dumped = _dump_store(eng, questions)
    return {"kind": "document", "split": f"SciFact train (first {len(questions)} claims)",
            "docs": docs or 5183, "queries": dumped, "n_relevant": n_rel}


def dump_locomo(cache: Path) -> dict[str, Any]:
    from bench import locomo
    from engine import ContextEngine

    embedder = sd.make_embedder("minilm")
    data = json.loads(locomo.DATA.read_text(encoding="utf-8"))
    queries: list[Query] = []
    n_rel: list[int] = []
    for idx in locomo.SPLITS["dev"]:  # dev only: test is never tuned on
        sample = data[idx]
        texts, _ = locomo.turn_texts(sample)
        qs = []
        for q in sample["qa"]:
            ev = {e for e in q["evidence"] if e in texts}
            if q.get("category") in (1, 2, 3, 4) and ev:
                qs.append((q["question"], lambda row, ev=ev: (
                    (t := str(row.meta.get("turn_id", ""))), int(t in ev))))
                n_rel.append(len(ev))
        with tempfile.TemporaryDirectory() as tmp:
            locomo.prepare_store(sample, embedder, Path(tmp) / "s", cache / "locomo")
            with ContextEngine.open(Path(tmp) / "s", embedder=embedder) as eng:
                queries += _dump_store(eng, qs)
    return {"kind": "conversation", "split": "LoCoMo dev (conversations 0-4)",
            "queries": queries, "n_relevant": n_rel}


QUESTION_SETS = {"A": "recall_questions.json", "B": "recall_questions_b.json",
                 "C": "recall_questions_c.json"}  # under bench/data (--questions)


def question_files(spec: str) -> list[Path]:
    """``--questions``: comma-separated question files (the schema of
    ``bench.recall_quality``), each a path or a set's letter (``QUESTION_SETS``)."""
    data = Path(__file__).resolve().parent / "data"
    out = []
    for name in (n.strip() for n in spec.split(",")):
        if not name:
            continue
        path = data / QUESTION_SETS[name] if name in QUESTION_SETS else Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"--questions: no file {path}")
        out.append(path)
    if not out:
        raise ValueError("--questions: no question file named")
    return out


def transcript_label(q: dict[str, Any]) -> Callable[[Any], tuple[str, int]]:
    """A window row -> (its chunk id, 1 when it answers ``q``): from ``q``'s session and
    holding one of its evidence strings, as ``bench.recall_quality`` judges a hit."""
    from bench import recall_scoring as rs

    def label(row: Any) -> tuple[str, int]:
        found = rs.first_answer([(row.meta.get("session"), row.text)], q["sid"], q["evidence"])
        return str(row.id), int(found is not None)
    return label


def dump_transcripts(cache: Path, questions: Path | None = None) -> dict[str, Any]:
    """The dev split of one question file (default: ``bench.recall_quality``'s set A)
    over the recall bench's store (test: never)."""
    from bench import recall_quality as rq
    from engine import ContextEngine
    from engine.lab import Filters

    path = questions or rq.QUESTIONS
    embedder = sd.make_embedder("minilm")
    dirs = rq.corpus_dirs()
    qs = rq.load_questions("dev", rq.session_ids(dirs), path)  # before any build
    store, _ = rq.prepare_store(embedder, cache, dirs)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(store, Path(tmp) / "s")
        with ContextEngine.open(Path(tmp) / "s", embedder=embedder) as eng:
            eng.warm_up(background=False)  # the same vector index for every question
            dumped = _dump_store(eng, [(q["q"], transcript_label(q)) for q in qs],
                                 Filters(kinds=("transcript",)), expand=True)
    return {"kind": "transcript", "split": f"{path.name}, dev split ({len(qs)})",
            "queries": dumped, "n_relevant": [1] * len(qs),
            "groups": [q["session"] for q in qs], "sets": [[path.name, len(qs)]],
            "session_expand": eng.rt.cfg.rerank.session_expand}


def merge_dumps(dumps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several question files' transcript dumps as one: their questions in order, grouped
    by session across files (a session's questions of every file share a CV fold)."""
    if len(dumps) == 1:
        return dumps[0]
    out = {**dumps[0], "split": " + ".join(d["split"] for d in dumps),
           "sets": [x for d in dumps for x in sets_of(d)]}
    for key in ("queries", "n_relevant", "groups"):
        out[key] = [x for d in dumps for x in d[key]]
    return out


def sets_of(dump: dict[str, Any]) -> list[list[Any]]:
    """A dump's question files and their question counts, in order (one, when it has none)."""
    return list(dump.get("sets") or [[dump["split"], len(dump["queries"])]])


class Prepared:
    """A dump as arrays: per question, its feature matrix, labels and group keys."""

    def __init__(self, dump: dict[str, Any]) -> None:
        self.kind = dump["kind"]
        self.items = []
        for q, n in zip(dump["queries"], dump["n_relevant"], strict=True):
            feats = np.array([[c[2].get(f, 0.0) for f in FIT_FEATURES] for c in q],
                             dtype=np.float64).reshape(len(q), len(FIT_FEATURES))
            labels = np.array([c[1] for c in q], dtype=np.int8)
            keys = [c[0] for c in q]
            self.items.append((feats, labels, keys, n))


def _order(feats: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.argsort(-(feats @ w), kind="stable")


def ndcg10_docs(feats: np.ndarray, labels: np.ndarray, keys: list[str], n_rel: int,
                w: np.ndarray) -> float:
    seen: dict[str, int] = {}
    for i in _order(feats, w):
        if keys[i] not in seen:
            seen[keys[i]] = int(labels[i])
            if len(seen) >= 10:
                break
    dcg = sum(lab / math.log2(r + 2) for r, lab in enumerate(seen.values()))
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(10, n_rel)))
    return dcg / ideal if ideal else 0.0


def recall_turns(feats: np.ndarray, labels: np.ndarray, keys: list[str], n_rel: int,
                 w: np.ndarray) -> float:
    order = _order(feats, w)
    found = [len({keys[i] for i in order[:k] if labels[i]}) for k in (10, 25)]
    return sum(f / n_rel for f in found) / 2


def hit5_mrr10(feats: np.ndarray, labels: np.ndarray, keys: list[str], n_rel: int,
               w: np.ndarray) -> float:
    """Mean of hit@5 and MRR@10 of the first answering candidate (recall questions)."""
    order = _order(feats, w)[:10]
    rank = next((r for r, i in enumerate(order, start=1) if labels[i]), None)
    return ((rank is not None and rank <= 5) + (1.0 / rank if rank else 0.0)) / 2


def objective(prep: Prepared, w: dict[str, float]) -> float:
    fn = {"document": ndcg10_docs, "transcript": hit5_mrr10}.get(prep.kind, recall_turns)
    vec = np.array([w.get(f, 0.0) for f in FIT_FEATURES])
    return statistics.mean(fn(f, lab, k, n, vec) for f, lab, k, n in prep.items)


def fit(dump: Prepared, start: dict[str, float], drop_below: float,
        rounds: int = 3) -> tuple[dict[str, float], list[str]]:
    w = {f: float(start.get(f, 0.0)) for f in FIT_FEATURES}
    best = objective(dump, w)
    for r in range(rounds):
        improved = False
        for f in FIT_FEATURES:
            for v in GRID:
                if v == w[f]:
                    continue
                trial = {**w, f: v}
                score = objective(dump, trial)
                if score > best + 1e-6:
                    best, w, improved = score, trial, True
        print(f"  round {r + 1}: {best:.4f} {w}", file=sys.stderr)
        if not improved:
            break
    dropped = []
    for f in FIT_FEATURES:
        if f == "fused" or not w[f]:
            continue
        trial = {**w, f: 0.0}
        score = objective(dump, trial)
        if score >= best - drop_below:
            dropped.append(f)
            w, best = trial, score
    return {f: v for f, v in w.items() if v}, dropped


EXCLUDED: set[str] = set()  # --exclude: features the listwise fit leaves at 0


def listwise(prep: Prepared, l2: float) -> tuple[dict[str, float], list[str]]:
    """Listwise softmax weights (``bench.rank_listwise``), rounded to 3 digits."""
    from bench.rank_listwise import fit_listwise

    keep = [i for i, f in enumerate(FIT_FEATURES) if f not in EXCLUDED]
    items = [(x[:, keep], y, k, n) for x, y, k, n in prep.items]
    w = fit_listwise(items, l2)
    return {FIT_FEATURES[i]: round(float(v), 3) for i, v in zip(keep, w, strict=True)
            if round(float(v), 3)}, []


def first_rank(item: Any, w: np.ndarray) -> int | None:
    """1-based rank under ``w`` of the item's first answering candidate in its top 10."""
    feats, labels, _, _ = item
    order = _order(feats, w)[:10]
    return next((r for r, i in enumerate(order, start=1) if labels[i]), None)


def _hit5(item: Any, w: np.ndarray) -> float:
    return float((r := first_rank(item, w)) is not None and r <= 5)


def _mrr10(item: Any, w: np.ndarray) -> float:
    return 1.0 / r if (r := first_rank(item, w)) else 0.0


def set_names(dump: dict[str, Any]) -> list[str]:
    """The question file of each of the dump's questions (one name when it has no sets)."""
    return [name for name, n in sets_of(dump) for _ in range(n)]


def figures(prep: Prepared, dump: dict[str, Any], w: dict[str, float]) -> dict[str, Any]:
    """hit@5 and MRR@10 of fixed weights ``w`` over the dump's questions, all and per
    question file (the current weights' figures beside a refit's cross-validation)."""
    vec = np.array([w.get(f, 0.0) for f in FIT_FEATURES])
    names = set_names(dump)
    out: dict[str, Any] = {}
    for name in dict.fromkeys(["all", *names]):
        items = [it for it, n in zip(prep.items, names, strict=True) if name in ("all", n)]
        out[name] = {"hit@5": round(statistics.mean(_hit5(it, vec) for it in items), 4),
                     "mrr@10": round(statistics.mean(_mrr10(it, vec) for it in items), 4)}
    return out


def cross_validate(prep: Prepared, dump: dict[str, Any],
                   fitter: Callable[[Prepared], tuple[dict[str, float], list[str]]],
                   folds: int) -> dict[str, Any] | None:
    """Held-out hit@5 and MRR@10 of ``fitter`` over session-grouped folds (a dump with
    ``groups``: the recall questions' sessions, across its question files), all and per
    question file (``by_set``: the same held-out ranks, counted over one file's questions)."""
    from bench.rank_listwise import grouped_cv

    groups = dump.get("groups")
    if not groups:
        return None
    fitted: dict[tuple[int, ...], np.ndarray] = {}  # one fit per fold, whatever is scored

    def fit_on(items: list[Any]) -> np.ndarray:
        key = tuple(id(it) for it in items)
        if key not in fitted:
            sub = Prepared.__new__(Prepared)
            sub.kind, sub.items = prep.kind, items
            w, _ = fitter(sub)
            fitted[key] = np.array([w.get(f, 0.0) for f in FIT_FEATURES])
        return fitted[key]

    names = set_names(dump)
    of = {id(it): n for it, n in zip(prep.items, names, strict=True)}

    def held(name: str) -> dict[str, float]:
        share = len(names) / sum(name in ("all", n) for n in names)

        def within(fn: Callable[[Any, np.ndarray], float]) -> Callable[[Any, np.ndarray], float]:
            return lambda it, w: fn(it, w) if name in ("all", of[id(it)]) else 0.0
        return {m: round(share * grouped_cv(prep.items, groups, fit_on, within(fn), folds), 4)
                for m, fn in (("hit@5", _hit5), ("mrr@10", _mrr10))}

    out: dict[str, Any] = held("all")
    if len(set(names)) > 1:
        out["by_set"] = {n: held(n) for n in dict.fromkeys(names)}
    return out


def transcript_tag(questions: Path) -> str:
    """What a transcript dump depends on: the chunks (``code_tag``), the transcript
    features, the expansion and the question file (its name and content)."""
    import hashlib

    from bench.recall_quality import QUESTIONS, code_tag

    feats = Path(__file__).resolve().parents[1] / "engine/retrieval/transcript_rank.py"
    tag = (f"-{code_tag()}-{hashlib.sha256(feats.read_bytes()).hexdigest()[:6]}"
           f"-x{os.environ.get('CTX__RERANK__SESSION_EXPAND', 'd')}")
    if questions.resolve() != QUESTIONS.resolve():  # set A keeps its dump's old name
        tag += f"-{questions.stem}-{hashlib.sha256(questions.read_bytes()).hexdigest()[:6]}"
    return tag


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--scifact-docs", type=int, help="the SciFact subset store of N documents")
    ap.add_argument("--scifact-store", type=Path, help="use this SciFact store")
    ap.add_argument("--claims", type=int, help="only the first N SciFact train claims")
    ap.add_argument("--drop-below", type=float, default=0.002)
    ap.add_argument("--only", choices=("document", "conversation", "transcript"))
    ap.add_argument("--from-fused", action="store_true",
                    help="start from the fused order alone, not from the current weights")
    ap.add_argument("--method", choices=("ascent", "listwise"), default="ascent",
                    help="coordinate ascent on the metric, or a listwise softmax fit "
                         "(bench.rank_listwise)")
    ap.add_argument("--l2", type=float, default=0.01, help="listwise: L2 penalty")
    ap.add_argument("--exclude", default="",
                    help="comma-separated features held at 0 (not fitted)")
    ap.add_argument("--cv", type=int, default=0,
                    help="also report session-grouped K-fold cross-validation (transcripts)")
    ap.add_argument("--questions", default="A",
                    help="transcripts: comma-separated question files whose dev split is "
                         "fitted together (paths, or A, B, C: bench/data/recall_questions"
                         "{,_b,_c}.json); the CV keeps a session's questions of every file "
                         "in one fold")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    EXCLUDED.update(f for f in args.exclude.split(",") if f)
    sd.bench_env()
    from engine.lab import DEFAULT_PROFILES

    args.store_cache.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    try:
        sets = question_files(args.questions)
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    jobs = {"document": lambda: dump_scifact(args.store_cache, args.scifact_docs, args.claims,
                                              args.scifact_store),
            "conversation": lambda: dump_locomo(args.store_cache),
            "transcript": lambda: merge_dumps([cached(
                f"transcript{transcript_tag(f)}", dumper(f)) for f in sets])}

    def dumper(questions: Path) -> Callable[[], dict[str, Any]]:
        return lambda: dump_transcripts(args.store_cache, questions)

    def cached(name: str, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        path = args.store_cache / f"rank-features-{name}.json"
        if path.exists():
            return dict(json.loads(path.read_text()))
        dump = make()
        path.write_text(json.dumps(dump))
        return dump

    for kind, make in jobs.items():
        if args.only and kind != args.only:
            continue
        tag = (f"-{args.scifact_docs}-{args.claims}" if kind == "document" else "")
        dump = make() if kind == "transcript" else cached(f"{kind}{tag}", make)
        prep = Prepared(dump)
        start = {"fused": 1.0} if args.from_fused else DEFAULT_PROFILES[kind]
        before = objective(prep, start)
        start_figures = figures(prep, dump, start) if kind == "transcript" else None

        def fitter(p: Prepared, start: dict[str, float] = start
                   ) -> tuple[dict[str, float], list[str]]:
            return (listwise(p, args.l2) if args.method == "listwise"
                    else fit(p, start, args.drop_below))

        weights, dropped = fitter(prep)
        after = objective(prep, weights)
        cv = cross_validate(prep, dump, fitter, args.cv) if args.cv else None
        metric = {"document": "nDCG@10", "transcript": "mean of hit@5 and MRR@10"}.get(
            kind, "mean of evidence recall@10 and @25")
        print(f"{kind} ({dump['split']}, {len(dump['queries'])} questions): {metric} "
              f"{before:.4f} -> {after:.4f}; weights {weights}; dropped {dropped}"
              + (f"; the current weights: {start_figures}" if start_figures else "")
              + (f"; {args.cv}-fold session-grouped CV: {cv}" if cv else ""))
        result[kind] = {"split": dump["split"], "questions": len(dump["queries"]),
                        "docs": dump.get("docs"), "metric": metric,
                        "before": round(before, 4), "after": round(after, 4),
                        **({"before_figures": start_figures} if start_figures else {}),
                        "start": start, "weights": weights, "dropped": dropped,
                        "grid": list(GRID), "drop_below": args.drop_below,
                        "method": args.method, "l2": args.l2 if args.method == "listwise"
                        else None, "cv": cv,
                        "command": "python -m bench.fit_rank " + " ".join(argv or sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
