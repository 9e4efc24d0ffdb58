"""Recall's learned reader (``recall.adapt``): what it costs to fit, and what it changes.

The store of ``bench.recall_quality`` (the shared and public sessions, real MiniLM,
built once and cached) is copied; on the copy:

1. the fit from nothing (every query-side text embedded: the cost of new sessions)
   and a refit (the texts read back from the vault), each with wall and CPU seconds,
   pairs and sessions, and the CPU projected per 1,000 sessions (the bound: 60 s);
2. ``recall`` with the reader off, and with each variant on (map only, terms only,
   both; identity pulls 0.01 / 0.1 / 1; ``--variants``), every question of the split
   asked of each in the same run: hit@1/5/10 and MRR@10 overall, paraphrased and per
   kind, 95% session-bootstrap intervals, and the paired difference to "off";
3. the dense lane alone over every transcript chunk (the vector only, no keyword or
   rerank), with no map, the query-side map, and a map fitted on both sides (the
   documents mapped too: the stored index would have to be rebuilt for it);
4. recall latency with the reader off and on, asked in turns (p50 / p95, ms).

    python -m bench.recall_adapt [--split dev|test|all] [--variants a,b] [--boot 2000]
                                 [--questions FILE]

The fit uses the store's own sessions only (those of every split): what the product
does on a user's machine. The questions are never read by the fit.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import recall_quality as rq
from bench import recall_scoring as rs
from bench import scifact_data as sd
from bench.stats import machine_state

# name -> AdaptConfig changes (on top of the defaults); "off" is recall.adapt = false
VARIANTS: dict[str, dict[str, Any]] = {
    "map": {"use_map": True, "use_terms": False},
    "map t12": {"use_map": True, "use_terms": False, "texts_per_session": 12,
                "text_tokens": 64},
    "terms": {"use_map": False, "use_terms": True},
    "map+terms": {"use_map": True, "use_terms": True},
    "map λ0.001": {"use_map": True, "use_terms": False, "identity_weight": 0.001},
    "map λ0.1": {"use_map": True, "use_terms": False, "identity_weight": 0.1},
    "map λ1": {"use_map": True, "use_terms": False, "identity_weight": 1.0},
    "terms w0.6": {"use_map": False, "use_terms": True, "terms_weight": 0.6},
    "map lane 1": {"use_map": True, "use_terms": False, "map_lane": 1.0},
}
FIT_KEYS = ("temperature", "identity_weight", "learning_rate", "steps", "batch", "min_pairs",
            "holdout", "texts_per_session", "text_tokens", "terms_per_word",
            "terms_min_count", "terms_min_npmi")


def fit_timed(eng: Any, cfg: Any) -> dict[str, Any]:
    """One fit under ``cfg`` (recall.adapt_fit), timed: its info plus wall and CPU."""
    from engine.lab import fit_recall_adapter as fit

    with rq.settings(eng, recall={"adapt": True, "adapt_fit": cfg}):
        t, c = time.perf_counter(), time.process_time()
        info = fit(eng.rt)
        return {**info, "wall": time.perf_counter() - t, "cpu": time.process_time() - c}


def asked(eng: Any, questions: list[dict[str, Any]], recall: dict[str, Any]
          ) -> tuple[list[int | None], list[float]]:
    """Each question's first answering rank and its recall time (ms)."""
    ranks, times = [], []
    with rq.settings(eng, recall=recall):
        for q in questions:
            t = time.perf_counter()
            hits = eng.recall(q["q"], k=10).hits or ()
            times.append((time.perf_counter() - t) * 1000)
            ranks.append(rs.first_answer([(h.meta.get("session"), h.text) for h in hits],
                                         q["sid"], q["evidence"]))
    return ranks, times


def dense_ranks(eng: Any, questions: list[dict[str, Any]],
                maps: dict[str, tuple[np.ndarray | None, str]]) -> dict[str, list[int | None]]:
    """The vector lane alone over every transcript chunk: rank of the first answer in
    the top 10, per map (None: the identity; "both": documents mapped too)."""
    from engine.lab import RECALL_CHUNK_KINDS
    from engine.lab import vault_adapt as rows

    pieces = rows.pieces(eng.rt.vault, RECALL_CHUNK_KINDS)
    got = eng.rt.vectors.vectors([p.id for p in pieces])
    keep = [p for p in pieces if p.id in got]
    docs = np.stack([got[p.id] for p in keep]).astype(np.float32)
    qv = eng.rt.embedder.encode([q["q"] for q in questions]).astype(np.float32)
    out = {}
    for name, (m, sides) in maps.items():
        qm = qv @ m.T if m is not None else qv
        dm = docs @ m.T if m is not None and sides == "both" else docs
        qm /= np.linalg.norm(qm, axis=1, keepdims=True)
        dm = dm / np.linalg.norm(dm, axis=1, keepdims=True)
        top = np.argsort(-(qm @ dm.T), axis=1)[:, :10]
        out[name] = [rs.first_answer([(keep[j].session, keep[j].text) for j in row],
                                     q["sid"], q["evidence"])
                     for q, row in zip(questions, top, strict=True)]
    return out


def both_sides_map(eng: Any, cfg: Any) -> np.ndarray | None:
    """A map fitted with the documents mapped too, on the same pairs."""
    from engine.lab import fit_map, training_set

    with rq.settings(eng, recall={"adapt": True, "adapt_fit": cfg}):
        q, d, groups, _, _ = training_set(eng.rt)
    return fit_map(q, d, groups, cfg, sides="both").matrix


def pcts(times: list[float]) -> str:
    s = sorted(times)
    p50, p95 = statistics.median(s), s[int(0.95 * (len(s) - 1))]
    return f"{p50:.0f} / {p95:.0f}" if p50 >= 10 else f"{p50:.3f} / {p95:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap draws")
    ap.add_argument("--questions", type=Path, default=rq.QUESTIONS,
                    help="a question file of recall_questions.json's schema (set B: "
                         "bench/data/recall_questions_b.json)")
    ap.add_argument("--latency-chunks", type=int, default=0,
                    help="then grow the store to about this many chunks (copies of the "
                         "sessions, new ids), let a sync fit it, and time recall off / on")
    args = ap.parse_args(argv)
    dirs = rq.corpus_dirs()
    if not dirs:
        print(f"no transcripts under {rq.SHARED}", file=sys.stderr)
        return 2
    sd.bench_env()
    from engine import ContextEngine
    from engine.lab import vault_adapt as rows

    embedder = sd.make_embedder("minilm")
    args.store_cache.mkdir(parents=True, exist_ok=True)
    store, index_s = rq.prepare_store(embedder, args.store_cache, dirs)
    questions = rq.load_questions(args.split, rq.session_ids(dirs), args.questions)
    names = [v for v in args.variants.split(",") if v]
    ranks: dict[str, list[int | None]] = {}
    times: dict[str, list[float]] = {}
    fits: dict[str, dict[str, Any]] = {}
    print(f"machine: {machine_state()}")
    with tempfile.TemporaryDirectory(prefix="ctx-recall-adapt-") as tmp:
        shutil.copytree(store, Path(tmp) / "store")
        with ContextEngine.open(Path(tmp) / "store", embedder=embedder) as eng:
            eng.warm_up(background=False)
            base_cfg = eng.rt.cfg.recall.adapt_fit
            rows.drop_model(eng.rt.vault, texts=True)  # the cached store may hold a fit
            chunks = eng.rt.vault.chunk_count()
            fits["first fit"] = fit_timed(eng, base_cfg)
            fits["refit"] = fit_timed(eng, base_cfg)
            ranks["off"], times["off"] = asked(eng, questions, {"adapt": False})
            fitted_under: tuple[Any, ...] = tuple(getattr(base_cfg, k) for k in FIT_KEYS)
            for name in names:
                cfg = dataclasses.replace(base_cfg, **VARIANTS[name])
                key = tuple(getattr(cfg, k) for k in FIT_KEYS)
                if key != fitted_under:
                    fits[f"fit for {name}"] = fit_timed(eng, cfg)
                    fitted_under = key
                ranks[name], times[name] = asked(eng, questions,
                                                 {"adapt": True, "adapt_fit": cfg})
            # on/off again, in turns, for the latency (same questions, same load)
            on_cfg = dataclasses.replace(base_cfg, use_map=True, use_terms=True)
            if tuple(getattr(on_cfg, k) for k in FIT_KEYS) != fitted_under:
                fit_timed(eng, on_cfg)
            lat: dict[str, list[float]] = {"off": [], "on (map+terms)": []}
            for _ in range(2):
                lat["off"] += asked(eng, questions, {"adapt": False})[1]
                lat["on (map+terms)"] += asked(eng, questions,
                                               {"adapt": True, "adapt_fit": on_cfg})[1]
            from engine.lab import learned

            with rq.settings(eng, recall={"adapt": True, "adapt_fit": on_cfg}):
                model = learned(eng.rt)
            query_map = model.matrix if model is not None else None
            dense = dense_ranks(eng, questions, {
                "dense, no map": (None, "query"), "dense, query map": (query_map, "query"),
                "dense, both sides": (both_sides_map(eng, base_cfg), "both")})
            scale = (grown(eng, questions, Path(tmp), args.latency_chunks, dirs)
                     if args.latency_chunks else None)
    sessions = len({q["session"] for q in questions})
    print(f"\nRecall's learned reader: {args.questions.name}, {args.split} split, "
          f"{len(questions)} questions over "
          f"{sessions} sessions; store of {chunks} chunks (indexed in {index_s:.0f} s)")
    print("\nThe fit (numpy, on this machine; CPU per 1,000 sessions = CPU / sessions * 1000)")
    print("| fit | pairs | sessions | texts embedded | term words | map used | held-out MRR "
          "identity / map | wall s | CPU s | CPU s per 1,000 sessions |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, f in fits.items():
        embedded = f["texts"] if name == "first fit" else 0
        print(f"| {name} | {f['pairs']} | {f['sessions']} | {embedded} | {f['terms']} | "
              f"{'yes' if f['map'] else 'no'} | {f['holdout_mrr_identity']:.3f} / "
              f"{f['holdout_mrr_map']:.3f} | {f['wall']:.1f} | {f['cpu']:.1f} | "
              f"{f['cpu'] / max(1, f['sessions']) * 1000:.0f} |")
    report = rs.report(questions, ranks, boot=args.boot, base="off")
    print()
    print(rs.render(report, ["off", *names], base="off"))
    print("\nThe vector lane alone (every transcript chunk, top 10): the map on the query "
          "side, and on both sides")
    drep = rs.report(questions, dense, boot=args.boot, base="dense, no map")
    print(rs.render(drep, list(dense), base="dense, no map"))
    print(f"\nRecall latency, ms (p50 / p95), {len(questions)} questions x 2 in turns, "
          f"{chunks} chunks; machine {machine_state()}")
    print("| recall | p50 / p95 |\n|---|---|")
    for name, t in lat.items():
        print(f"| {name} | {pcts(t)} |")
    if scale is not None:
        f = scale["fit"]
        print(f"\nAt scale: {scale['sessions']} new sessions synced ({scale['chunks']} chunks "
              f"in the store, sync {scale['sync_s']:.0f} s); the fit the sync queued: "
              f"{f['pairs']} pairs from {f['sessions']} sessions, {f['texts']} texts, "
              f"{f['seconds']:.1f} s, CPU {f['cpu_seconds']:.1f} s = "
              f"{f['cpu_seconds'] / scale['sessions'] * 1000:.0f} s per 1,000 new sessions "
              f"(bound 60); map used: {'yes' if f['map'] else 'no'}")
        print(f"Recall latency at {scale['chunks']} chunks, ms (p50 / p95), "
              f"{len(questions)} questions x 3 in turns; machine {machine_state()}")
        print("| recall | p50 / p95 |\n|---|---|")
        for name, t in scale["latency"].items():
            print(f"| {name} | {pcts(t)} |")
    return 0


def grown(eng: Any, questions: list[dict[str, Any]], tmp: Path, target: int,
          dirs: list[Path]) -> dict[str, Any]:
    """The store grown to about ``target`` chunks by copies of its sessions (new session
    ids; the embedding cache serves their chunks), synced as a user's sync is (which
    queues the fit); then recall timed with the reader off and on, in turns."""
    from bench.recall_bench import replicate
    from engine.lab import learned

    chunks = eng.rt.vault.chunk_count()
    sessions = len(rq.session_ids(dirs))
    made = replicate(dirs, tmp / "copies", max(0, int((target - chunks) / (chunks / sessions))))
    t = time.perf_counter()
    res = eng.sync([str(tmp / "copies")])
    sync_s = time.perf_counter() - t
    if res.adapt_job:
        eng.wait(res.adapt_job)
    model = learned(eng.rt)
    eng.warm_up(background=False)
    lat: dict[str, list[float]] = {"off": [], "on (map)": []}
    for _ in range(3):
        for name, recall in (("off", {"adapt": False}), ("on (map)", {"adapt": True})):
            with rq.settings(eng, recall=recall):
                for q in questions:
                    eng.rt._qcache.clear()
                    t = time.perf_counter()
                    eng.recall(q["q"], k=10)
                    lat[name].append((time.perf_counter() - t) * 1000)
    from engine.lab import plan_query, query_adapter

    over = []  # what the reader adds to a query: its lookup and the map (no lane runs)
    for q in questions * 3:
        plan = plan_query(eng.rt, q["q"], eng.rt.cfg)
        vec = eng.rt.embed_query(q["q"])
        t = time.perf_counter()
        adapter = query_adapter(eng.rt, plan.analysis.words)
        if adapter is not None and adapter.vector_map is not None:
            adapter.vector_map(vec)
        over.append((time.perf_counter() - t) * 1000)
    lat["the reader's own part (lookup + map)"] = over
    return {"sessions": made, "chunks": eng.rt.vault.chunk_count(), "sync_s": sync_s,
            "fit": dict(model.info) if model is not None else {}, "latency": lat}


if __name__ == "__main__":
    sys.exit(main())
