"""Choose the rerank window of distinct-source search on SciFact train.

``search(k, distinct_sources=True)`` reranks the top ``rerank.distinct_window``
fused chunks (the rest follow in fused order) and keeps the best chunk of each
source. With 100 sources asked for and about 1.3 chunks per matching abstract,
a window of 100 chunks leaves a quarter of the sources in fused order. For each
window this prints nDCG@10 and Recall@100 over the documents of the first 100
distinct sources, for every SciFact train claim (the test split is not in the
project), with the lanes run once per claim as ``search`` runs them.

    python -m bench.fit_window [--store-cache DIR | --store DIR] [--windows 100,200]
                               [--limit N] [--out FILE]

The result goes to ``--out`` (default ``bench/data/window_fit.json``);
``rerank.distinct_window`` (``engine/retrieval/rerank.py``) cites it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench import scifact_data as sd
from bench.scifact import ndcg10, recall100

OUT = Path(__file__).resolve().parent / "data" / "window_fit.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store-cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--store", type=Path, help="use this SciFact store")
    ap.add_argument("--windows", default="100,150,200,300")
    ap.add_argument("--limit", type=int, help="only the first N claims")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sd.bench_env()
    from engine import ContextEngine
    from engine.lab import distinct_sources_of, rank_hits, run_lanes

    embedder = sd.make_embedder("minilm")
    store = args.store or sd.prepare_store(embedder, args.store_cache, None)[0]
    windows = [int(w) for w in args.windows.split(",")]
    got: dict[int, tuple[list[float], list[float]]] = {w: ([], []) for w in windows}
    qrels = sd.qrels()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(store, Path(tmp) / "s")
        with ContextEngine.open(Path(tmp) / "s", embedder=embedder) as eng:
            rt = eng.rt
            fair = sd.covered_claims(eng, qrels)
            claims = [(q, t) for q, t in sd.queries().items() if q in fair][: args.limit]
            s = rt.cfg.search
            depth = min(1000, max(100, s.lane_depth) * s.distinct_depth_factor)  # as search
            configs = {w: dataclasses.replace(rt.cfg, rerank=dataclasses.replace(
                rt.cfg.rerank, window=w)) for w in windows}
            for qid, text in claims:
                res = run_lanes(rt, text, depth=depth)
                for w, cfg in configs.items():
                    top = distinct_sources_of(rank_hits(rt, cfg, res).ranked, res.rows, 100)
                    docs = [d for c, _, _ in top if (d := sd.doc_id(res.rows[c].source))]
                    got[w][0].append(ndcg10(docs, qrels[qid]))
                    got[w][1].append(recall100(docs, qrels[qid]))
    rows = {w: {"ndcg@10": round(statistics.mean(a), 4), "recall@100": round(statistics.mean(b), 4)}
            for w, (a, b) in got.items()}
    print(f"SciFact train ({len(claims)} claims), search(k=100, distinct_sources=True)")
    print("| window | nDCG@10 | Recall@100 |\n|---|---|---|")
    for w, r in rows.items():
        print(f"| {w} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "split": "SciFact train", "claims": len(claims), "windows": rows,
        "command": "python -m bench.fit_window " + " ".join(argv or sys.argv[1:])},
        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
