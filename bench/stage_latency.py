"""Where build_context's milliseconds go, stage by stage, on a store already built.

    python -m bench.stage_latency STORE [--queries 200] [--budget 1500] [--json FILE]
                                  [--store-model minilm|fake] [--build N]
                                  [--ab SECTION.KEY=VALUE ...] [--in-place]

STORE is a ctx data dir (a cached benchmark store, or one grown here: with
``--build N`` and no store at STORE, the files of ``bench.store_bench``'s corpus
are ingested until N chunks, with ``--store-model``'s embedder; about 17 minutes
for 100k chunks with the fake one on the shared 2-core machine). Queries are drawn from the store's own chunks
(3-8 consecutive words of a random chunk, fixed seed). The query-embedding
cache is off: every call embeds its query with the real MiniLM (ONNX when an
export exists), as a user pays. When the store's vectors were made by the fake
embedder (a store grown for size only), MiniLM embeds the queries under the
store's model name, so the lanes run on an index of the right size; which
vectors come back differs, the work per call does not. The calls run on a
temporary copy of STORE (build_context records access statistics in its store),
unless ``--in-place``.

``--ab`` compares the store's configuration (A) with it changed as given (B):
every query runs under both, in alternating order, so that load on a shared
machine falls on both alike (a ``store.*`` change, read at open, gets B its own
engine on a second copy of STORE); printed: build_context wall and CPU p50/p95 per arm
and the B/A ratios.

The engine is warmed up first, as ``ctx serve`` and the app do at open (the
keyword lane's common-term counts, the vector cache of a big store).

Printed: median and p95 per stage of build_context (its own timings: embed,
vector, keyword, read_ahead and prepare (the keyword hits read and scanned while the
vector lane runs; only on calls where it was still running), fetch, vectors (stored
vectors read for the rerank window),
rerank (including vectors), dedupe, expand, pack, access), the wall time of the
whole call, and the keyword lane on its own (the FTS query the lane runs),
beside the DESIGN.md budgets, with the machine's load average before and after.
The CPU rows are the process's CPU time per call: on a machine shared with other
work, wall times wait for a core and the CPU time is what a quiet machine would
come near (the query embedder's threads count in it too).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.models import embedding_config
from bench.stats import machine_state, summary, table

BUDGETS_MS = {"build_context (wall)": 50.0, "build_context (CPU)": 50.0, "keyword lane": 10.0,
              "keyword lane (CPU)": 10.0, "vector lane": 5.0, "pack": 5.0}


def draw_queries(eng: Any, n: int, seed: int = 7) -> list[str]:
    """``n`` queries of 3-8 consecutive words from random chunks of the store."""
    return [q for q, _ in draw_query_sources(eng, n, seed)]


def draw_query_sources(eng: Any, n: int, seed: int = 7) -> list[tuple[str, int]]:
    """``draw_queries``'s queries with the id of the chunk each was drawn from."""
    ids = eng.rt.vault.chunk_ids()
    rng = random.Random(seed)
    words = re.compile(r"[A-Za-z][A-Za-z_]{2,}")
    out: list[tuple[str, int]] = []
    while len(out) < n and ids:
        cid = rng.choice(ids)
        row = eng.rt.vault.chunks([cid])
        found = words.findall(next(iter(row.values())).text) if row else []
        if len(found) >= 6:
            start = rng.randrange(0, max(1, len(found) - 6))
            out.append((" ".join(found[start:start + rng.randint(3, 8)]), cid))
    return out


class QueryModel:
    """MiniLM under the store's model name (see the module docstring)."""

    def __init__(self, name: str, dim: int, model: Any) -> None:
        self.name, self.dim, self._model = name, dim, model

    def encode(self, texts: Sequence[str]) -> Any:  # an ndarray (numpy loads lazily here)
        return self._model.encode(texts)


def measure(eng: Any, queries: list[str], budget: int) -> dict[str, dict[str, float]]:
    from engine.lab import Filters, analyze_query, keyword_lane

    rt = eng.rt
    stages: dict[str, list[float]] = {}
    for q in queries[:5]:  # warm the model and the store's caches
        eng.build_context(q, budget=budget)
    for q in queries:
        rt._qcache.clear()
        cpu = time.process_time()
        t = time.perf_counter()
        payload = eng.build_context(q, budget=budget)
        wall = (time.perf_counter() - t) * 1000
        stages.setdefault("build_context (CPU)", []).append((time.process_time() - cpu) * 1000)
        for name, ms in payload.timings.items():
            stages.setdefault(name, []).append(ms)
        stages.setdefault("vector lane", []).append(
            payload.timings.get("vector", 0.0) - payload.timings.get("embed", 0.0))
        stages.setdefault("build_context (wall)", []).append(wall)
    for q in queries:
        cpu = time.process_time()
        t = time.perf_counter()
        keyword_lane(rt, analyze_query(q, rt.cfg.query), 50, Filters(), rt.cfg)
        stages.setdefault("keyword lane", []).append((time.perf_counter() - t) * 1000)
        stages.setdefault("keyword lane (CPU)", []).append((time.process_time() - cpu) * 1000)
    return {k: summary(v) for k, v in stages.items()}


@contextlib.contextmanager
def store_copy(store: Path, in_place: bool) -> Iterator[Path]:
    """``store`` itself when ``in_place``, else a copy of it removed afterwards: every
    build_context records access statistics, which would change the cached store and
    the next run's ranking."""
    if in_place:
        yield store
        return
    with tempfile.TemporaryDirectory(prefix="ctx-stage-latency-") as tmp:
        copy = Path(tmp) / store.name
        shutil.copytree(store, copy)
        yield copy


def parse_ab(items: list[str]) -> dict[str, Any]:
    """``["search.parallel_lanes=false"]`` -> ``{"search": {"parallel_lanes": False}}``."""
    import tomllib

    out: dict[str, Any] = {}
    for item in items:
        key, _, raw = item.partition("=")
        section, _, name = key.partition(".")
        if not (section and name and raw):
            raise SystemExit(f"--ab wants SECTION.KEY=VALUE, got {item!r}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        out.setdefault(section, {})[name] = value
    return out


def measure_ab(arms: dict[str, tuple[Any, Any]], queries: list[str], budget: int
               ) -> dict[str, dict[str, float]]:
    """build_context under arm A and arm B (name -> (engine, config)), each query under
    both in alternating order; wall and CPU ms per arm."""
    saved = {name: eng.rt.cfg for name, (eng, _) in arms.items()}
    out: dict[str, list[float]] = {}
    try:
        for q in queries[:5]:
            for eng, cfg in arms.values():
                eng.rt.cfg = cfg
                eng.build_context(q, budget=budget)
        for i, q in enumerate(queries):
            for name in (("A", "B") if i % 2 == 0 else ("B", "A")):
                eng, cfg = arms[name]
                eng.rt.cfg = cfg
                eng.rt._qcache.clear()
                cpu, t = time.process_time(), time.perf_counter()
                eng.build_context(q, budget=budget)
                out.setdefault(f"{name} wall", []).append((time.perf_counter() - t) * 1000)
                out.setdefault(f"{name} CPU", []).append((time.process_time() - cpu) * 1000)
    finally:
        for name, (eng, _) in arms.items():
            eng.rt.cfg = saved[name]
    return {k: summary(v) for k, v in out.items()}


def open_warm(store: Path, store_model: Any, model: Any, config: Any = None) -> Any:
    """The engine on ``store``, queries embedded by ``model``, warmed up as ``ctx serve``
    and the app do at open (the keyword counts, the vector cache of a big store)."""
    from engine import ContextEngine

    eng = ContextEngine.open(store, embedder=store_model, config=config)
    if store_model is not model:
        eng.rt.embedder = QueryModel(store_model.name, store_model.dim, model)
    t = time.perf_counter()
    eng.warm_up(background=False)
    print(f"warm-up of {store.name}: {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    eng.rt.vault.guard.wait()  # a big vault's page check, in a thread after open
    print(f"vault page check of {store.name} done {time.perf_counter() - t:.1f} s later")
    return eng


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--store-model", default="minilm", choices=("minilm", "fake"),
                    help="the embedder that made the store's vectors")
    ap.add_argument("--build", type=int, help="grow a store of this many chunks at STORE first")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--ab", nargs="+", metavar="SECTION.KEY=VALUE",
                    help="compare the store's config with it changed so (see above)")
    ap.add_argument("--in-place", action="store_true",
                    help="run on STORE itself; by default on a temporary copy, since "
                         "build_context records access statistics in the store it runs on")
    args = ap.parse_args(argv)
    ab = parse_ab(args.ab) if args.ab else None
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ["CTX__EMBEDDING__QUERY_CACHE_SIZE"] = "0"
    from engine import ContextEngine, load_config
    from engine.lab import make_embedder

    before = machine_state()
    model = make_embedder(embedding_config(model="minilm"))
    model.encode(["warm up"])
    store_model = model if args.store_model == "minilm" else make_embedder(
        embedding_config(model=args.store_model))
    if args.build and not Path(args.store).exists():
        from bench.store_bench import ingest, pick_files

        files, _ = pick_files(args.build)
        with ContextEngine.open(Path(args.store), embedder=store_model) as eng:
            seconds, _ = ingest(eng, files)
            print(f"built {args.store}: {eng.status().chunks} chunks in {seconds:.0f} s")
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(store_copy(Path(args.store), args.in_place))
        eng = stack.enter_context(open_warm(store, store_model, model))
        chunks = eng.status().chunks
        queries = draw_queries(eng, args.queries)
        if ab is not None:
            arms = {"A": (eng, eng.rt.cfg), "B": (eng, eng.rt.cfg.with_overrides(ab))}
            if "store" in ab:  # read at open: B gets its own engine on its own copy
                other = stack.enter_context(store_copy(Path(args.store), False))
                cfg = load_config(other).with_overrides(ab)
                b = stack.enter_context(open_warm(other, store_model, model, cfg))
                arms["B"] = (b, b.rt.cfg)
            return print_ab(measure_ab(arms, queries, args.budget), ab, chunks, before)
        result = measure(eng, queries, args.budget)
    order = ["embed", "vector lane", "vector", "keyword", "read_ahead", "prepare", "analysis",
             "fetch", "vectors",
             "rerank", "dedupe", "expand", "live", "pack", "access", "total",
             "build_context (wall)", "build_context (CPU)", "keyword lane",
             "keyword lane (CPU)"]
    names = [n for n in order if n in result] + sorted(set(result) - set(order))
    rows = []
    for name in names:
        s = result[name]
        target = BUDGETS_MS.get(name)
        rows.append([name, s["n"], s["p50"], s["p95"], f"{target:.0f}" if target else "-",
                     f"{s['p95'] / target:.2f}x" if target else "-"])
    print(f"\nbuild_context stages, {chunks} chunks, budget {args.budget}, query cache off, "
          f"query model {type(model).__name__}")
    print(table(["stage", "calls", "p50 ms", "p95 ms", "budget p95 ms", "p95 / budget"], rows))
    print(f"load average before {before}, after {machine_state()} ({os.cpu_count()} cores)")
    if args.json:
        Path(args.json).write_text(json.dumps({"chunks": chunks, "stages": result,
                                               "load_before": before, "load_after": machine_state()},
                                              indent=2))
    return 0


def print_ab(result: dict[str, dict[str, float]], ab: dict[str, Any], chunks: int,
             before: str) -> int:
    print(f"\nbuild_context, {chunks} chunks, A: the store's config, B: A with {ab}; "
          "query cache off, each query under both arms")
    rows = []
    for kind in ("wall", "CPU"):
        a, b = result[f"A {kind}"], result[f"B {kind}"]
        rows.append([kind, a["n"], a["p50"], a["p95"], b["p50"], b["p95"],
                     f"{b['p50'] / a['p50']:.2f}", f"{b['p95'] / a['p95']:.2f}"])
    print(table(["ms", "calls", "A p50", "A p95", "B p50", "B p95", "B/A p50", "B/A p95"],
                rows))
    print(f"load average before {before}, after {machine_state()} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
