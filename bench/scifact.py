"""SciFact train: document ranking and packing, ctx beside BM25, dense and RRF.

The corpus (5,183 abstracts) is ingested once through the public API with the
real MiniLM into a cached store (``bench.scifact_data``); every claim of the
train split (../shared/data/scifact/NOTICE.md; the test split is not in the
project) is then asked of that store. Printed, all from this one run and store:

- nDCG@10 and Recall@100 of documents (a document ranks where its best chunk
  ranks) for BM25 (the store's FTS5 keyword lane, every query word), dense
  (the store's vector lane), RRF k=60 of the two, and ctx ``search``
  (``distinct_sources=True``);
- a relevant document among the payload's items at 500/1000/2000 tokens, for
  ctx ``build_context`` and for the RRF list packed greedily (each chunk an item
  "title\\ntext", in rank order, skipped when it does not fit);
- payload waste: the share of 2000-token payloads that repeat a run of 80
  characters verbatim;
- build_context latency (p50/p95, the query embedded on every call).

``--digest`` also prints a sha256 over every payload and search result
(``bench.digest``, run under PYTHONHASHSEED=0), with every build made at one fixed ``now`` (a day after the
store's newest source), so that two runs that print the same digests returned
the same payloads byte for byte.

    python -m bench.scifact [--store-cache DIR] [--limit N] [--json FILE] [--digest]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import scifact_data as sd
from bench.digest import RunDigest, fixed_hash_seed
from bench.stats import pct

BUDGETS = (500, 1000, 2000)
DEPTH = 300  # chunks per baseline lane: enough for 100 distinct documents
REPEAT_CHARS = 80


def ndcg10(ranked: Sequence[str], rel: Mapping[str, int]) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(10, len(rel))))
    return dcg / ideal if ideal else 0.0


def recall100(ranked: Sequence[str], rel: Mapping[str, int]) -> float:
    return len(set(ranked[:100]) & set(rel)) / len(rel) if rel else 0.0


def docs_of(chunk_ids: Sequence[int], rows: Mapping[int, Any]) -> list[str]:
    """Documents in order of their best chunk."""
    out: dict[str, None] = {}
    for cid in chunk_ids:
        row = rows.get(cid)
        did = sd.doc_id(row.source) if row is not None else None
        if did is not None:
            out.setdefault(did, None)
    return list(out)


def repeats(text: str, n: int = REPEAT_CHARS) -> bool:
    """Whether some run of ``n`` characters occurs twice in ``text``."""
    seen: set[int] = set()
    for i in range(max(0, len(text) - n + 1)):
        h = hash(text[i:i + n])
        if h in seen:
            return True
        seen.add(h)
    return False


class Baselines:
    """BM25, dense and RRF rankings of one claim, from the store's own lanes."""

    def __init__(self, eng: Any) -> None:
        self.rt = eng.rt

    def rankings(self, query: str) -> tuple[dict[str, list[int]], dict[int, Any]]:
        from engine.lab import Filters, analyze_query, fts_query, rrf

        rt = self.rt
        a = analyze_query(query, rt.cfg.query)
        kw = [cid for cid, _ in rt.vault.keyword(fts_query(a), DEPTH, Filters())]
        dense = [cid for cid, _ in rt.vectors.query(rt.embed_query(query), DEPTH)]
        fused = [cid for cid, _, _ in rrf({"keyword": kw, "vector": dense}, {}, k=60)]
        rows = rt.vault.chunks(sorted(set(kw) | set(dense)))
        return {"BM25": kw, "dense": dense, "RRF k=60": fused}, rows

    def greedy_pack(self, order: Sequence[int], rows: Mapping[int, Any], budget: int
                    ) -> set[str]:
        """Documents in a greedy pack of chunks in rank order (a peer's packing)."""
        counter = self.rt.counter
        used, docs = 0, set()
        for cid in order:
            row = rows[cid]
            cost = counter.count(f"{row.title}\n{row.text}\n\n")
            if used + cost > budget:
                continue
            used += cost
            did = sd.doc_id(row.source)
            if did:
                docs.add(did)
        return docs


def evaluate(eng: Any, claims: list[tuple[str, str]], qrels: Mapping[str, Mapping[str, int]],
             digest: RunDigest | None = None) -> dict[str, Any]:
    base = Baselines(eng)
    methods = ("BM25", "dense", "RRF k=60", "ctx")
    nd: dict[str, list[float]] = {m: [] for m in methods}
    rc: dict[str, list[float]] = {m: [] for m in methods}
    pay: dict[str, dict[int, list[float]]] = {m: {b: [] for b in BUDGETS}
                                              for m in ("RRF greedy", "ctx")}
    lat: list[float] = []
    search_lat: list[float] = []
    waste: list[bool] = []
    stages: dict[str, list[float]] = {}
    now = None
    if digest is not None:  # one fixed time: payloads then depend on the store alone
        now = max(s.ingested_at for s in eng.sources()) + 86400.0
    for n, (qid, text) in enumerate(claims):
        rel = qrels[qid]
        lists, rows = base.rankings(text)
        for name, order in lists.items():
            docs = docs_of(order, rows)
            nd[name].append(ndcg10(docs, rel))
            rc[name].append(recall100(docs, rel))
        for b in BUDGETS:
            got = base.greedy_pack(lists["RRF k=60"], rows, b)
            pay["RRF greedy"][b].append(float(bool(got & set(rel))))
        t = time.perf_counter()
        hits = eng.search(text, k=100, distinct_sources=True)
        search_lat.append((time.perf_counter() - t) * 1000)
        if digest is not None:
            digest.search(text, hits)
        docs = [d for h in hits if (d := sd.doc_id(h.source))]
        nd["ctx"].append(ndcg10(docs, rel))
        rc["ctx"].append(recall100(docs, rel))
        for b in BUDGETS:
            t = time.perf_counter()
            payload = eng.build_context(text, budget=b, now=now)
            lat.append((time.perf_counter() - t) * 1000)
            if digest is not None:
                digest.payload(text, payload)
            for stage, ms in payload.timings.items():
                stages.setdefault(stage, []).append(ms)
            got = {d for item in payload.items if (d := sd.doc_id(item.source))}
            pay["ctx"][b].append(float(bool(got & set(rel))))
            if b == 2000:
                waste.append(repeats(payload.context))
        if (n + 1) % 100 == 0:
            print(f"  {n + 1} claims, ctx nDCG@10 so far {statistics.mean(nd['ctx']):.3f}",
                  file=sys.stderr)
    mean = statistics.mean
    return {
        "claims": len(claims),
        "rows": {m: {"ndcg@10": mean(nd[m]), "recall@100": mean(rc[m])} for m in methods},
        "payload": {m: {str(b): mean(v) for b, v in by.items()} for m, by in pay.items()},
        "payload_repeats_80": mean(waste) if waste else float("nan"),
        "build_p50_ms": pct(lat, 50), "build_p95_ms": pct(lat, 95),
        "search_p50_ms": pct(search_lat, 50), "search_p95_ms": pct(search_lat, 95),
        "stage_median_ms": {s: statistics.median(v) for s, v in stages.items()},
    }


def print_report(rep: dict[str, Any], chunks: int, ingest_s: float) -> None:
    print(f"\nSciFact train ({rep['claims']} claims), {chunks} chunks, "
          f"ingest {ingest_s:.0f} s (cached store)")
    print("| method | nDCG@10 | Recall@100 | in payload @500 | @1000 | @2000 |")
    print("|---|---|---|---|---|---|")
    for name, row in rep["rows"].items():
        pay_name = "RRF greedy" if name == "RRF k=60" else name
        pay = rep["payload"].get(pay_name)
        cells = " | ".join(f"{pay[str(b)]:.3f}" for b in BUDGETS) if pay else "- | - | -"
        label = "**ctx**" if name == "ctx" else name
        print(f"| {label} | {row['ndcg@10']:.3f} | {row['recall@100']:.3f} | {cells} |")
    rrf = rep["rows"]["RRF k=60"]
    ctx = rep["rows"]["ctx"]
    print(f"ctx - RRF: nDCG@10 {ctx['ndcg@10'] - rrf['ndcg@10']:+.3f}, "
          f"Recall@100 {ctx['recall@100'] - rrf['recall@100']:+.3f}")
    print(f"2000-token payloads repeating {REPEAT_CHARS} chars verbatim: "
          f"{rep['payload_repeats_80']:.1%}")
    print(f"build_context p50 {rep['build_p50_ms']:.1f} ms, p95 {rep['build_p95_ms']:.1f} ms; "
          f"search(k=100, distinct) p50 {rep['search_p50_ms']:.1f} ms, "
          f"p95 {rep['search_p95_ms']:.1f} ms")
    print("stage medians (ms): " + ", ".join(
        f"{s} {v:.1f}" for s, v in rep["stage_median_ms"].items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--limit", type=int, help="only the first N claims (quick runs)")
    ap.add_argument("--docs", type=int, help="the store of a fixed N-document subset")
    ap.add_argument("--store", type=Path, help="use this store instead of the cached one")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--digest", action="store_true",
                    help="print a sha256 over every payload and search result (fixed now)")
    args = ap.parse_args(argv)
    if args.digest:
        fixed_hash_seed("bench.scifact", sys.argv[1:] if argv is None else argv)
    if not sd.prepared():
        return 2
    from engine import ContextEngine

    embedder = sd.make_embedder("minilm")
    args.store_cache.mkdir(parents=True, exist_ok=True)
    if args.store:
        store, ingest_s = args.store, float("nan")
    else:
        store, ingest_s = sd.prepare_store(embedder, args.store_cache, args.docs)
    qrels = sd.qrels()
    with tempfile.TemporaryDirectory(prefix="ctx-scifact-") as tmp:
        work = Path(tmp) / "store"
        shutil.copytree(store, work)  # runs record access statistics: keep the cache clean
        with ContextEngine.open(work, embedder=embedder) as eng:
            chunks = eng.rt.vault.chunk_count()
            print(f"store: {len(eng.sources())} documents, {chunks} chunks", file=sys.stderr)
            fair = sd.covered_claims(eng, qrels)
            claims = [(q, t) for q, t in sd.queries().items() if q in fair]
            if args.limit:
                claims = claims[: args.limit]
            digest = RunDigest() if args.digest else None
            rep = evaluate(eng, claims, qrels, digest)
    print_report(rep, chunks, ingest_s)
    if digest is not None:
        print("\n".join(digest.lines()))
    if args.json:
        Path(args.json).write_text(json.dumps({**rep, "chunks": chunks, "ingest_s": ingest_s},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
