"""Documents on the int8 model vs the float32 model: speed, closeness, retrieval quality.

    python -m bench.embed_precision [--every 20] [--rounds 3] [--quality]
                                    [--docs 1500] [--stride 2] [--store-cache DIR]

Texts: the chunks of every N-th SciFact abstract as the model sees them at
ingest (``bench.chunk_sweep.embed_texts``, the chunking in force). Speed: both
document models embed all of them in one call, in alternating rounds in this
process (ratios of one run; the machine's load is printed). Closeness: cosine
of each int8 vector to the float32 one. Quality (``--quality``): the SciFact
train subset of ``bench.chunk_sweep`` (its stores cached per precision), with
queries always on the float32 model, as ``engine.embedding.onnx`` does.
Needs the ONNX export (``make setup``; ``CTX__EMBEDDING__ONNX_DIR`` picks another).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import scifact_data as sd
from bench.models import embedding_config
from bench.stats import load_avg, pct


def chunking() -> dict[str, int]:
    """The chunking in force, as ``bench.chunk_sweep`` takes a setting."""
    from engine import load_config

    c = load_config(None).chunking
    return {"target_tokens": c.target_tokens, "max_tokens": c.max_tokens,
            "overlap_tokens": c.overlap_tokens}


def embedders() -> dict[str, Any]:
    from engine.lab import OnnxEmbedder, find_export

    export = find_export(embedding_config())
    if export is None:
        raise SystemExit("no ONNX export: run make setup (or set CTX__EMBEDDING__ONNX_DIR)")
    out = {p: OnnxEmbedder.open(export, document_precision=p) for p in ("float32", "int8")}
    if out["int8"].document_precision != "int8":
        raise SystemExit(f"the export at {export} has no int8 model: re-export it")
    for emb in out.values():
        emb.encode_documents(["warm up", "a second text to warm the worker threads"])
    return out


def speed(embs: dict[str, Any], texts: list[str], rounds: int) -> dict[str, list[float]]:
    secs: dict[str, list[float]] = {p: [] for p in embs}
    for _ in range(rounds):
        for p, emb in embs.items():
            t = time.perf_counter()
            emb.encode_documents(texts)
            secs[p].append(time.perf_counter() - t)
    return secs


def quality(embs: dict[str, Any], docs: int, stride: int, cache: Path) -> dict[str, Any]:
    from bench.chunk_sweep import CachedEmbedder
    from bench.chunk_sweep import quality as sweep_quality
    return {p: sweep_quality(chunking(), CachedEmbedder(emb), cache, docs, stride)
            for p, emb in embs.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=20, help="every N-th abstract's chunks")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quality", action="store_true", help="also SciFact retrieval quality")
    ap.add_argument("--docs", type=int, default=1500, help="abstracts in the quality stores")
    ap.add_argument("--stride", type=int, default=2, help="every N-th train claim")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench" / "embed-precision")
    args = ap.parse_args(argv)
    if not sd.prepared():
        return 2
    from bench.chunk_sweep import embed_texts
    texts = embed_texts(chunking(), list(sd.corpus())[::args.every])
    embs = embedders()
    print(f"{len(texts)} chunk texts; load before {load_avg()}", file=sys.stderr)
    secs = speed(embs, texts, args.rounds)
    load_after = load_avg()
    f32, i8 = embs["float32"].encode_documents(texts), embs["int8"].encode_documents(texts)
    cos = (f32 * i8).sum(1)
    print(f"\nDocument embedding, {len(texts)} SciFact chunk texts, {args.rounds} alternating "
          f"rounds (load after {load_after})")
    print("| document model | seconds per round (median) | min | texts/s | x float32 |")
    print("|---|---|---|---|---|")
    base = statistics.median(secs["float32"])
    for p, s in secs.items():
        med = statistics.median(s)
        print(f"| {p} | {med:.2f} | {min(s):.2f} | {len(texts) / med:.1f} | "
              f"{base / med:.2f} |")
    print(f"cosine int8 vs float32: mean {cos.mean():.4f}, p5 {pct(list(cos), 5):.4f}, "
          f"min {cos.min():.4f}")
    if args.quality:
        args.store_cache.mkdir(parents=True, exist_ok=True)
        rep = quality(embs, args.docs, args.stride, args.store_cache)
        print(f"\nSciFact train, {args.docs} abstracts, every {args.stride}th claim; queries "
              "on float32 (load after " + load_avg() + ")")
        print("| document model | nDCG@10 | Recall@100 | in payload @500 | @1000 | @2000 "
              "| RRF nDCG@10 |")
        print("|---|---|---|---|---|---|---|")
        for p, q in rep.items():
            ctx, pay = q["rows"]["ctx"], q["payload"]["ctx"]
            print(f"| {p} | {ctx['ndcg@10']:.3f} | {ctx['recall@100']:.3f} | "
                  f"{pay['500']:.3f} | {pay['1000']:.3f} | {pay['2000']:.3f} | "
                  f"{q['rows']['RRF k=60']['ndcg@10']:.3f} |")
    for emb in embs.values():
        emb.close()
    return 0 if np.isfinite(cos).all() else 1


if __name__ == "__main__":
    sys.exit(main())
