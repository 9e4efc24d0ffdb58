"""Fit the packing factors of chat turns (``PackingConfig``) on LoCoMo dev by replay.

``build_context`` on a conversation store ranks the turns (lanes, rerank, dedupe),
adds the neighbours of the best hits with an inherited score, weighs turns by who
spoke them (``engine.packing.turn_prior``) and packs whole turns, one header per
session, by score. Only the last three steps depend on the factors fitted here
(``neighbour_after``, ``neighbour_before``, ``speaker_other``,
``speaker_other_neighbour``, ``question_turn``), so the ranked candidates of each
question are computed once (dump) and the scoring and packing are replayed for
every trial (fast: a grid in minutes instead of a bench run per trial).

1. dump: LoCoMo dev (conversations 0-4; test is never read), categories 1-4, per
   question the deduplicated ranked turns with their scores, the query's entities,
   and per conversation every turn's source, position, speaker, tokens and the
   tokens of its session header.
2. fit: coordinate ascent over a grid, from the previous defaults, maximizing the
   mean of evidence recall in the payload at 500/1000/2000 tokens (the bench's
   ctx@B); then the same fit on conversations 0-2 checked on 3-4.

    python -m bench.fit_pack [--store-cache DIR] [--out FILE]

``--store-cache`` is ``bench.locomo``'s (ingested stores reused). The replay counts
tokens as the packer does but does not render; ``python -m bench.locomo --split dev``
gives the real figures (they agree within 0.003 here). Results go to ``--out``
(default ``bench/data/pack_fit.json``); the values are copied into
``engine/packing/packer.py`` by hand, where this file is cited.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import locomo
from bench import scifact_data as sd

OUT = Path(__file__).resolve().parent / "data" / "pack_fit.json"
BUDGETS = (500, 1000, 2000)
FRAME = 20  # tokens of the payload's head and group header
OLD = {"neighbour_after": 0.9, "neighbour_before": 0.8, "speaker_other": 1.0,
       "speaker_other_neighbour": 1.0, "question_turn": 1.0}
GRID = {"neighbour_after": (0.8, 0.85, 0.9, 0.95), "neighbour_before": (0.7, 0.8, 0.85, 0.9),
        "speaker_other": (0.7, 0.8, 0.85, 0.9, 0.95, 1.0),
        "speaker_other_neighbour": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
        "question_turn": (0.8, 0.9, 0.95, 1.0)}


def dump(cache: Path) -> list[dict[str, Any]]:
    from engine import ContextEngine
    from engine.lab import format_time, rank_hits, run_lanes, suppress_near_duplicates

    embedder = sd.make_embedder("minilm")
    data = json.loads(locomo.DATA.read_text(encoding="utf-8"))
    convs = []
    for idx in locomo.SPLITS["dev"]:  # dev only: test is never tuned on
        sample = data[idx]
        texts, _ = locomo.turn_texts(sample)
        with tempfile.TemporaryDirectory() as tmp:
            locomo.prepare_store(sample, embedder, Path(tmp) / "s", cache)
            with ContextEngine.open(Path(tmp) / "s", embedder=embedder) as eng:
                rt, count = eng.rt, eng.rt.counter
                rows = list(rt.vault.chunks(rt.vault.chunk_ids()).values())
                turns = {r.id: {"sid": r.source_id, "ord": r.ordinal,
                                "tok": count.count(r.text + "\n"),
                                "hdr": count.count(f"[turn · {format_time(r.time)}] "
                                                   f"{r.title}\n") + 1,
                                "speaker": r.meta.get("speaker"), "ask": "?" in r.text,
                                "tid": r.meta.get("turn_id")} for r in rows}
                qs = []
                for q in sample["qa"]:
                    ev = [e for e in q["evidence"] if e in texts]
                    if q.get("category") not in (1, 2, 3, 4) or not ev:
                        continue
                    res = run_lanes(rt, q["question"])
                    result = rank_hits(rt, rt.cfg, res)
                    ranked, vec = result.ranked, result.vectors
                    order = [c for c, _, _ in ranked]
                    kept, dropped = suppress_near_duplicates(
                        order, vec, rt.cfg.search.dedupe_threshold,
                        texts={c: res.rows[c].text for c in order if c not in vec})
                    score = {c: s for c, s, _ in ranked}
                    qs.append({"ev": ev, "entities": list(res.analysis.entities),
                               "kept": [(c, score[c]) for c in kept],
                               "dropped": sorted(dropped)})
                convs.append({"turns": {str(k): v for k, v in turns.items()},
                              "speakers": sorted(rt.vault.speakers()), "qs": qs})
        print(f"  dumped dev conversation {idx}: {len(qs)} questions", file=sys.stderr)
    return convs


def scores(conv: dict[str, Any], q: dict[str, Any], f: dict[str, float]) -> dict[str, float]:
    """Packing scores of the question's candidates, as ``memory_candidates`` makes them."""
    from engine.lab import TurnPrior

    turns = conv["turns"]
    prior = TurnPrior.for_query(q["entities"], conv["speakers"] if q["entities"] else [],
                                other_speaker=f["speaker_other"],
                                other_neighbour=f["speaker_other_neighbour"],
                                question=f["question_turn"])

    def weight(c: str, neighbour: bool = False) -> float:
        t = turns[c]
        return prior.weight(t["speaker"], "?" if t["ask"] else "", neighbour=neighbour)

    kept = [(str(c), s) for c, s in q["kept"]]
    top = kept[0][1] if kept and kept[0][1] else 1.0
    norm = {c: max(0.0, s / top) * weight(c) for c, s in kept}
    at = {(t["sid"], t["ord"]): c for c, t in turns.items()}
    dropped = {str(d) for d in q["dropped"]}
    out = dict(norm)
    for h, _ in kept[:30]:
        sid, o = turns[h]["sid"], turns[h]["ord"]
        for d in range(1, 4):
            for n, fac in ((at.get((sid, o + d)), f["neighbour_after"]),
                           (at.get((sid, o - d)), f["neighbour_before"])):
                if n is None or n in dropped:
                    continue
                out[n] = max(out.get(n, -1.0), norm[h] * fac ** d * weight(n, True))
    return out


def replay(convs: Sequence[dict[str, Any]], f: dict[str, float]) -> dict[int, float]:
    """Mean evidence recall in the payload per budget (whole turns, a header per session)."""
    got: dict[int, list[float]] = {b: [] for b in BUDGETS}
    for conv in convs:
        turns = conv["turns"]
        by_tid = {t["tid"]: c for c, t in turns.items()}
        for q in conv["qs"]:
            sc = scores(conv, q, f)
            order = sorted(sc, key=lambda c: (-sc[c], "chunk:" + c))
            for b in BUDGETS:
                used, runs, placed = FRAME, set(), set()
                for c in order:
                    t = turns[c]
                    cost = t["tok"] + (0 if t["sid"] in runs else t["hdr"])
                    if used + cost <= b:
                        used += cost
                        runs.add(t["sid"])
                        placed.add(c)
                got[b].append(sum(by_tid.get(e) in placed for e in q["ev"]) / len(q["ev"]))
    return {b: round(statistics.mean(v), 4) for b, v in got.items()}


def objective(convs: Sequence[dict[str, Any]], f: dict[str, float]) -> float:
    return statistics.mean(replay(convs, f).values())


def fit(convs: Sequence[dict[str, Any]], start: dict[str, float], rounds: int = 3
        ) -> dict[str, float]:
    f, best = dict(start), objective(convs, start)
    for r in range(rounds):
        improved = False
        for name, grid in GRID.items():
            for v in grid:
                if v == f[name]:
                    continue
                score = objective(convs, {**f, name: v})
                if score > best + 2e-4:
                    best, f, improved = score, {**f, name: v}, True
        print(f"  round {r + 1}: {best:.4f} {f}", file=sys.stderr)
        if not improved:
            break
    return f


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench" / "locomo")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sd.bench_env()
    args.store_cache.mkdir(parents=True, exist_ok=True)
    path = args.store_cache / "pack-replay-dev.json"
    if path.exists():
        convs = json.loads(path.read_text())
    else:
        convs = dump(args.store_cache)
        path.write_text(json.dumps(convs))
    before = replay(convs, OLD)
    chosen = fit(convs, OLD)
    after = replay(convs, chosen)
    half = fit(convs[:3], OLD)
    held = {"fit on": "dev conversations 0-2", "checked on": "dev conversations 3-4",
            "factors": half, "before": replay(convs[3:], OLD), "after": replay(convs[3:], half)}
    print(f"LoCoMo dev replay, ctx@{'/'.join(map(str, BUDGETS))}: {before} -> {after}\n"
          f"factors {chosen}\nheld out (fit 0-2, check 3-4): {held['before']} -> "
          f"{held['after']} with {half}")
    result = {"split": "LoCoMo dev (conversations 0-4)",
              "questions": sum(len(c["qs"]) for c in convs),
              "metric": "mean evidence recall in the payload at 500/1000/2000 tokens (replay)",
              "start": OLD, "factors": chosen, "before": before, "after": after,
              "halves": held, "grid": {k: list(v) for k, v in GRID.items()},
              "command": "python -m bench.fit_pack " + " ".join(argv or sys.argv[1:])}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
