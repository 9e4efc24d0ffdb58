"""The keyword lane at size: its latency and what it still finds, per way of bounding it.

    python -m bench.keyword_lane STORE [--queries 300] [--budgets 1000,2000,4000]
                                 [--seed 11] [--json FILE]
    python -m bench.keyword_lane STORE --scored-max 5000,20000 [--asked 60] [--recall]

STORE is a ctx data dir of 50k chunks or more (``python -m bench.stage_latency STORE
--build 100000 --store-model fake`` grows one; the keyword lane needs no vectors).
Queries are 3-8 consecutive words of random chunks of the store
(``bench.stage_latency.draw_query_sources``); the chunk a query was drawn from is the
one it should find, so "source@50" is the share of queries whose source chunk is in
the lane's top 50 (the lane's depth), a quality measure that needs no labels.
"overlap@50" is the share of the full query's top 50 that the arm also returns.

Arms, each query run under all of them in turn (so that load falls on all alike):
- full: every word in one FTS5 query (no bounding);
- pruned at D: words in more than D of the chunks left out (``keyword_max_df = D``,
  the lane before ``keyword_row_budget``);
- budget N, max_df D: pruned at D (1 keeps every word), and the rarest words find rows
  while their chunk counts add up to at most N; the others only rescore the rows found
  (``keyword_row_budget = N``).

With ``--scored-max``, the arms are the lane as configured with no bound on the rows
its finding words may score (``keyword_scored_max`` unbounded: "uncapped", the
reference of overlap@50) and with each given bound; ``--asked N`` asks
``bench.engine_scale``'s first N questions instead of drawn ones (no source chunk:
source@50 is 0), and ``--recall`` with recall's filter (the session kinds).
``--scale``: STORE is a ``bench.engine_scale`` store's data dir (opened with its model).

Printed: p50/p95 of the lane (ms, wall), p95 against the first arm's, source@50 and
overlap@50 (the share of the first arm's top 50 the arm also returns), with the
machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.models import embedding_config
from bench.stage_latency import draw_query_sources
from bench.stats import machine_state, summary, table

NO_LIMIT = 10**9


def arms(cfg: Any, budgets: list[int], max_dfs: list[float],
         scored_max: list[int] | None = None) -> dict[str, Any]:
    if scored_max:
        out = {"uncapped": cfg.with_overrides({"search": {"keyword_scored_max": NO_LIMIT}})}
        out.update({f"scored max {m}": cfg.with_overrides(
            {"search": {"keyword_scored_max": m}}) for m in scored_max})
        return out
    out = {"full": cfg.with_overrides({"search": {"keyword_prune_min_chunks": NO_LIMIT}})}
    for d in max_dfs:
        search = {"keyword_prune_min_chunks": 0, "keyword_max_df": d}
        if d < 1.0:
            out[f"pruned at {d:g}"] = cfg.with_overrides(
                {"search": {**search, "keyword_row_budget": NO_LIMIT}})
        for b in budgets:
            out[f"budget {b}, max_df {d:g}"] = cfg.with_overrides(
                {"search": {**search, "keyword_row_budget": b}})
    return out


def measure(eng: Any, drawn: list[tuple[str, int]], budgets: list[int],
            max_dfs: list[float], scored_max: list[int] | None = None,
            filters: Any = None) -> dict[str, dict[str, float]]:
    from engine.lab import Filters, analyze_query, keyword_lane

    rt = eng.rt
    configs = arms(rt.cfg, budgets, max_dfs, scored_max)
    filters = filters or Filters()
    first = next(iter(configs))
    times: dict[str, list[float]] = {name: [] for name in configs}
    found: dict[str, int] = dict.fromkeys(configs, 0)
    overlap: dict[str, float] = dict.fromkeys(configs, 0.0)
    for q, _ in drawn[:5]:  # warm the vocabulary and the page cache
        for cfg in configs.values():
            keyword_lane(rt, analyze_query(q, cfg.query), 50, filters, cfg)
    for i, (q, source) in enumerate(drawn):
        names = list(configs)
        names = names[i % len(names):] + names[:i % len(names)]  # rotate who goes first
        top: dict[str, list[int]] = {}
        for name in names:
            cfg = configs[name]
            t = time.perf_counter()
            hits = keyword_lane(rt, analyze_query(q, cfg.query), 50, filters, cfg)
            times[name].append((time.perf_counter() - t) * 1000)
            top[name] = [cid for cid, _ in hits]
        full = set(top[first])
        for name, ids in top.items():
            found[name] += source in ids
            overlap[name] += len(full & set(ids)) / max(1, len(full))
    n = max(1, len(drawn))
    return {name: {**summary(times[name]), "source@50": found[name] / n,
                   "overlap@50": overlap[name] / n} for name in configs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--budgets", default="1000,2000,4000")
    ap.add_argument("--max-dfs", default="0.05",
                    help="keyword_max_df values (1 keeps every word, common ones rescoring)")
    ap.add_argument("--scored-max", default="",
                    help="keyword_scored_max values, against the lane without the bound")
    ap.add_argument("--asked", type=int, default=0,
                    help="bench.engine_scale's first N questions instead of drawn ones")
    ap.add_argument("--recall", action="store_true", help="recall's filter (session kinds)")
    ap.add_argument("--scale", action="store_true",
                    help="STORE is a bench.engine_scale store (STORE/data; --asked implies it)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    scale = args.scale or args.asked > 0
    if scale:  # an engine_scale store: its keys' cost and its model
        os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    from engine import ContextEngine
    from engine.lab import make_embedder

    if not (args.store / "vault.db").exists():
        print(f"no store at {args.store}", file=sys.stderr)
        return 2
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    max_dfs = [float(d) for d in args.max_dfs.split(",") if d.strip()]
    scored_max = [int(m) for m in args.scored_max.split(",") if m.strip()]
    if scale:  # the store's own model (it is opened only with that one)
        from bench.engine_scale import query_model

        embedder = query_model()
    else:
        embedder = make_embedder(embedding_config(model="fake"))  # no lane here embeds
    with ContextEngine.open(args.store, embedder=embedder, create=False) as eng:
        chunks = eng.rt.vault.chunk_count()
        if args.asked:
            from bench.engine_scale import questions

            drawn = [(q, -1) for q in questions(args.asked)]
        else:
            drawn = draw_query_sources(eng, args.queries, args.seed)
        filters = None
        if args.recall:
            from engine.lab import RECALL_CHUNK_KINDS, Filters

            filters = Filters(kinds=RECALL_CHUNK_KINDS)
        before = machine_state()
        res = measure(eng, drawn, budgets, max_dfs, scored_max, filters)
        after = machine_state()
    base = res[next(iter(res))]["p95"]
    rows = [[name, r["p50"], r["p95"], f"{r['p95'] / base:.2f}x", f"{r['source@50']:.3f}",
             f"{r['overlap@50']:.3f}"] for name, r in res.items()]
    print(f"keyword lane, {chunks} chunks, {len(drawn)} queries (seed {args.seed}); "
          f"load {before} -> {after}")
    print(table(["arm", "p50 ms", "p95 ms", "p95 vs first", "source@50", "overlap@50"], rows))
    if args.json:
        args.json.write_text(json.dumps({"chunks": chunks, "queries": len(drawn),
                                         "load": [before, after], "arms": res}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
