"""A second, "detail" vector per tool chunk: does recall find more when a tool call's
similarity to the question is the best of two views of it? (issue 31, an experiment)

A tool call chunk's vector is made from its *view* (``engine.recall.embedview``): the
``Assistant:`` line's first 240 characters, the ``Tool`` line's first 100 and the
result's first 120. On set B (``bench/data/recall_questions_b.json``) the answering text
of 16 of the 22 tool_call misses lies outside that view (a long command cuts its
``description=``, an Edit's ``new_string=`` is never embedded) against 2 of the 11
tool_call hits; replacing the view with the cut text lost on set A
(docs/recall-misses.md). Here the main view stays, and a chunk with more to say gets a
detail vector beside it:

- ``line``: a call chunk whose ``Tool`` line is longer than the view keeps: that whole
  line, its ``description=`` first and its ``old_string=`` left out (what was there
  before is not what the call did);
- ``part``: besides, an input part (``Tool Edit (input): <path>`` + the whole input,
  ``meta.part = "input"``, whose view is its first line only): its body from
  ``new_string:`` on (else all of it).

The chunk's similarity is then ``main + mix * max(0, detail - main - offset)`` (``mix``
1, ``offset`` 0: the max of its views) wherever recall reads one: the vector lane's candidates (the detail
vectors are searched exactly beside the index, through the same filters), the rerank's
``similarity`` feature, and the closest chunks of a later expanded session. Input
parts stay out of the vector lane (``recall.part_vector``): only their similarity
feature changes. Nothing in the product changes; the engine's functions are wrapped
for the run and restored.

Every variant is read on the same engine, on the cached store of ``bench.recall_quality``
(``--store-cache``), over set A's dev questions and set B, asked from no project and
from the question's project: hit@5, hit@10 and the agent view (k 8, budget 2000). The
rule to keep a variant: its hit@5 delta plus its agent-view delta is at least 0 in all
four cells. Also printed: how many detail vectors and the seconds the model took to
make them (per 1,000 sessions).

    python -m bench.recall_linevec [--variants line,line+part] [--mix 1,0.5] [--offset 0,0.1]
                                   [--where "lane,rerank,expand;lane"] [--limit N]
                                   [--store-cache DIR]

The dev split only (never the test split).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import recall_quality as rq
from bench import recall_scoring as rs

SET_B = rq.REPO / "bench" / "data" / "recall_questions_b.json"
TOOL_LINE = "Tool "
VIEW_TOOL_CHARS = 100  # engine.recall.embedview.TOOL_VIEW_CHARS["Tool "] (checked at run time)
DETAIL_CHARS = 1200  # a detail view's characters (the model reads ~256 word pieces of it)
CELLS = (("A", False), ("A", True), ("B", False), ("B", True))


def _fields(body: str) -> list[str]:
    """A stored call input's ``; ``-separated fields (``path; old_string=...; new_string=``)."""
    return [f for f in body.split("; ") if f]


def line_detail(text: str, keep: int = VIEW_TOOL_CHARS) -> str | None:
    """The detail view of a call chunk: its ``Tool`` line when the view cuts it (longer
    than ``keep``), ``description=`` first and ``old_string=`` left out; None otherwise."""
    for line in text.split("\n"):
        if line.startswith(TOOL_LINE):
            if len(line) <= keep:
                return None
            head, sep, body = line.partition(": ")
            if not sep:
                return line[:DETAIL_CHARS]
            fields = _fields(body)
            first = [f for f in fields if f.startswith("description=")]
            rest = [f for f in fields if not f.startswith(("description=", "old_string="))]
            return f"{head}: {'; '.join(first + rest)}"[:DETAIL_CHARS]
    return None


def part_detail(text: str) -> str | None:
    """The detail view of an input part (``Tool X (input): ...`` then the whole input):
    its body from ``new_string:`` on, else all of it; None for anything else."""
    head, _, body = text.partition("\n")
    if not head.startswith(TOOL_LINE) or "(input" not in head or not body.strip():
        return None
    at = body.find("new_string:")
    name = head[len(TOOL_LINE):].split(" (", 1)[0]
    return f"Tool {name}: {body[at:] if at >= 0 else body}"[:DETAIL_CHARS]


def detail_texts(rows: Sequence[Any], variant: str) -> dict[int, str]:
    """Chunk id -> its detail view under ``variant`` (``line`` or ``line+part``)."""
    out: dict[int, str] = {}
    for r in rows:
        if r.kind != "tool":
            continue
        part = r.meta.get("part")
        got = (line_detail(r.text) if not part
               else part_detail(r.text) if part == "input" and "part" in variant else None)
        if got:
            out[r.id] = got
    return out


class Details:
    """Detail vectors (unit length) of some chunks, with their main vectors, and how to
    mix them into a similarity."""

    def __init__(self, ids: Sequence[int], detail: np.ndarray, main: Mapping[int, np.ndarray],
                 mix: float, offset: float = 0.0) -> None:
        self.ids = list(ids)
        self.index = {c: i for i, c in enumerate(self.ids)}
        self.detail = detail
        self.main = main
        self.mix = mix
        self.offset = offset  # the detail counts only above main + offset

    def merged(self, cid: int, main_sim: float, q: np.ndarray) -> float:
        i = self.index.get(cid)
        if i is None:
            return main_sim
        d = float(self.detail[i] @ q)
        return main_sim + self.mix * max(0.0, d - main_sim - self.offset)

    def main_sim(self, cid: int, q: np.ndarray) -> float | None:
        v = self.main.get(cid)
        return None if v is None else float(v @ q)


WHERE = ("lane", "rerank", "expand")  # where a detail vector can count


@contextlib.contextmanager
def with_details(det: Details | None, where: Sequence[str] = WHERE) -> Iterator[None]:
    """Recall reads ``det``'s merged similarity while inside, ``where`` says in which
    stages: ``lane`` the vector lane's candidates and order, ``rerank`` the rerank's
    similarity feature, ``expand`` an expanded session's closest chunks (nothing when
    ``det`` is None)."""
    if det is None:
        yield
        return
    from engine import lab

    lanes, ranking, expand = lab.search_lanes, lab.search_ranking, lab.search_session_expand
    nearest0, sims0, closest0 = lanes.nearest, ranking.similarities, expand.closest

    def nearest(rt: Any, vec: np.ndarray, depth: int, filters: Any,
                vectors: dict[int, np.ndarray] | None = None
                ) -> tuple[list[int], dict[int, float]]:
        ids, sims = nearest0(rt, vec, depth, filters, vectors)
        q = np.asarray(vec, dtype=np.float32)
        found = dict(sims)
        scores = det.detail @ q
        floor = min((sims[c] for c in ids), default=-1.0) if len(ids) >= depth else -1.0
        extra = [c for c, s in zip(det.ids, scores.tolist(), strict=True)
                 if c not in found and s > floor]
        for c in extra:
            main = det.main_sim(c, q)
            found[c] = main if main is not None else -1.0
        if extra and not filters.empty:
            keep = rt.vault.filter_rows(extra, meta=filters.reads_meta)
            extra = [c for c in extra if c in keep and filters.matches(keep[c])]
        merged = {c: round(det.merged(c, s, q), lanes.SIM_DIGITS) for c, s in found.items()}
        order = (sorted([*ids, *extra], key=lambda c: (-merged[c], c))[:depth]
                 if "lane" in where else ids)
        return order, merged if "rerank" in where else found

    def similarities(res: Any, vectors: Mapping[int, np.ndarray]) -> dict[int, float]:
        out = sims0(res, vectors)
        q = res.query_vector
        if q is None or "rerank" not in where:
            return out
        q = np.asarray(q, dtype=np.float32)
        return {c: det.merged(c, s, q) if c not in res.similarity else s
                for c, s in out.items()}

    def closest(rt: Any, res: Any, rows: Sequence[Any], keep: int
                ) -> tuple[list[Any], dict[int, np.ndarray]]:
        q = res.query_vector
        if q is None or "expand" not in where:
            return closest0(rt, res, rows, keep)
        found = rt.vectors.vectors([r.id for r in rows])
        have = [r for r in rows if r.id in found]
        if not have:
            return closest0(rt, res, rows, keep)
        qv = np.asarray(q, dtype=np.float32)
        sims = np.array([det.merged(r.id, float(found[r.id] @ qv), qv) for r in have])
        chosen = {have[i].id for i in np.argsort(-sims, kind="stable")[:keep]}
        kept = [r for r in rows if r.id in chosen]
        return kept, {r.id: found[r.id] for r in kept}

    lanes.nearest, ranking.similarities, expand.closest = nearest, similarities, closest
    try:
        yield
    finally:
        lanes.nearest, ranking.similarities, expand.closest = nearest0, sims0, closest0


def build_details(eng: Any, rows: Sequence[Any], variant: str, mix: float
                  ) -> tuple[Details, float, int]:
    """The detail vectors of ``variant`` made by the engine's own embedder: (them, the
    seconds the model took, the word pieces it read)."""
    from engine import lab

    texts = detail_texts(rows, variant)
    ids = sorted(texts)
    t, wall = time.process_time(), time.perf_counter()
    vecs = np.asarray(lab.encode_documents(eng.rt.embedder, [texts[c] for c in ids]),
                      dtype=np.float32)
    spent = time.process_time() - t
    print(f"  embedded {len(ids)} detail views in {time.perf_counter() - wall:.1f} s wall",
          flush=True)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    main = eng.rt.vectors.vectors(ids)
    pieces = sum(eng.rt.counter.count(texts[c]) for c in ids)
    return Details(ids, vecs, {c: np.asarray(v, dtype=np.float32) for c, v in main.items()},
                   mix), spent, pieces


def read_cells(eng: Any, sets: Mapping[str, list[dict[str, Any]]], det: Details | None,
               where: Sequence[str] = WHERE
               ) -> dict[tuple[str, bool], dict[str, list[int | None]]]:
    """Each cell's ranks (recall k 10) and agent-view ranks under ``det`` (``where``)."""
    out = {}
    with with_details(det, where):
        for name, cwd in CELLS:
            qs = sets[name]
            ranks, _, _ = rq.rank_all(rq.recall_ranker(eng, from_project=cwd), qs)
            view, _ = rq.view_all(rq.agent_view(eng, from_project=cwd), qs)
            out[(name, cwd)] = {"rank": ranks, "view": view}
    return out


def cell_line(got: Mapping[str, list[int | None]]) -> tuple[float, float, float]:
    m = rs.metrics(got["rank"])
    return m["hit@5"], m["hit@10"], rs.metrics(got["view"])["hit@10"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="line,line+part",
                    help="comma-separated detail views (line, line+part); base always runs")
    ap.add_argument("--mix", default="1",
                    help="comma-separated mixes: similarity = main + mix * max(0, detail - main)")
    ap.add_argument("--offset", default="0",
                    help="comma-separated offsets: a detail counts only by what it exceeds "
                         "main + offset (the best of two cosines is higher than one)")
    ap.add_argument("--where", default=",".join(WHERE),
                    help="semicolon-separated sets of stages the detail counts in, each "
                         f"comma-separated among {', '.join(WHERE)} (lane,rerank;lane)")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions of each set")
    ap.add_argument("--store-cache", type=Path, default=Path("/tmp") / "ctx-bench")
    args = ap.parse_args(argv)
    from engine import lab

    keep = lab.recall_embedview.TOOL_VIEW_CHARS.get("Tool ")
    if keep != VIEW_TOOL_CHARS:
        print(f"the view keeps {keep} chars of a Tool line, this bench assumes "
              f"{VIEW_TOOL_CHARS}", file=sys.stderr)
        return 2
    with rq.open_bench("dev", args.store_cache) as (eng, set_a, _):
        set_b = rq.load_questions("dev", rq.session_infos(rq.corpus_dirs()), SET_B)
        sets = {"A": set_a, "B": set_b}
        if args.limit:
            sets = {k: v[: args.limit] for k, v in sets.items()}
        rows = list(eng.rt.vault.chunks([i for i, _, _ in rq.transcript_rows(eng)]).values())
        sessions = len({r.meta.get("session") for r in rows})
        tools = sum(1 for r in rows if r.kind == "tool" and not r.meta.get("part"))
        print(f"store: {len(rows)} transcript chunks, {tools} call chunks, {sessions} sessions; "
              f"A {len(sets['A'])} q, B {len(sets['B'])} q; load {os.getloadavg()[0]:.1f}",
              flush=True)
        results = {"base": read_cells(eng, sets, None)}
        costs: dict[str, tuple[int, float, int]] = {}
        for variant in [v for v in args.variants.split(",") if v]:
            det, spent, pieces = build_details(eng, rows, variant, 1.0)
            costs[variant] = (len(det.ids), spent, pieces)
            print(f"{variant}: {len(det.ids)} detail vectors, {spent:.1f} s CPU "
                  f"({spent / sessions * 1000:.0f} s per 1,000 sessions), "
                  f"{pieces} tokens", flush=True)
            for mix, offset, stages in [
                    (float(m), float(o), w) for m in args.mix.split(",") if m
                    for o in args.offset.split(",") if o for w in args.where.split(";") if w]:
                det.mix, det.offset = mix, offset
                name = (f"{variant} mix {mix:g}" + (f" offset {offset:g}" if offset else "")
                        + ("" if set(stages.split(",")) == set(WHERE) else f" in {stages}"))
                results[name] = read_cells(eng, sets, det, stages.split(","))
                print(f"  {name} read", flush=True)
    print(f"\nDetail vectors (hit@5 / hit@10 / agent view per cell; load "
          f"{os.getloadavg()[0]:.1f})")
    print("| variant | " + " | ".join(f"{n} {'cwd' if c else 'none'}" for n, c in CELLS)
          + " | rule (min of h5 + view deltas) |")
    print("|---|" + "---|" * (len(CELLS) + 1))
    base = results["base"]
    for name, got in results.items():
        cells, worst = [], float("inf")
        for cell in CELLS:
            h5, h10, view = cell_line(got[cell])
            b5, _, bv = cell_line(base[cell])
            worst = min(worst, h5 - b5 + view - bv)
            cells.append(f"{h5:.3f} / {h10:.3f} / {view:.3f}")
        print(f"| {name} | " + " | ".join(cells) + f" | {worst:+.3f} |")
    for name, got in results.items():
        if name == "base":
            continue
        for cell in CELLS:
            ids = [q["id"] for q in sets[cell[0]]]
            gained = [i for i, a, b in zip(ids, base[cell]["rank"], got[cell]["rank"], strict=True)
                      if (b or 99) <= 5 < (a or 99)]
            lost = [i for i, a, b in zip(ids, base[cell]["rank"], got[cell]["rank"], strict=True)
                    if (a or 99) <= 5 < (b or 99)]
            print(f"{name} {cell[0]} {'cwd' if cell[1] else 'none'}: at 5 gained {gained}, "
                  f"lost {lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
