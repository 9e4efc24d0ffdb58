"""Is a text's vector the same whatever batch it is embedded in? And at what speed?

    python -m bench.embed_determinism [--every 80] [--sentences 240] [--rounds 3]
                                      [--stores 40] [--no-arms]

Texts: the chunks of every N-th SciFact abstract as the model sees them at ingest
(``bench.chunk_sweep.embed_texts``), and short texts (single sentences of them,
5 to 40 words, like a transcript's turns). For each way of running the ONNX
export, int8 and float32 documents:

- ``alone`` (the engine's embedder: every text a run of its own, unpadded);
- ``batched`` (main before 2026-11-28: token-bounded padded batches, up to 256
  padded word pieces a run, longest first, on the worker threads);
- ``bucketed`` (each text padded to a width set by its own length alone, 16, 32,
  64, 128 or 256, and batched only with texts of its width: the same padding
  in every batch, so that padding alone cannot move it).

Determinism: each way embeds the texts all at once, in calls of 2, 3 and 7
texts, in reverse and in shuffled order; the table counts rows equal to the bit
to the text embedded alone in a call of its own, with the largest difference and
the lowest cosine; then each way's cosine to the float32 model's vector of the text
alone (how close the int8 vectors stay). Speed: every way embeds every text in one call, rounds
alternating ways (median and p95 of a round's texts/s, ratio to ``batched`` of
the same precision; the load before and after).

``--stores N``: two fresh stores of the same N SciFact abstracts (spread over the file), one ingested as
the SciFact bench does (all queued, one wait), the other one abstract at a time,
waited for, in reverse order: their vectors (keyed by the chunk's embedding
input) must be byte-identical; a sha256 of each store's vectors is printed.

Needs the ONNX export (``make setup``; ``CTX__EMBEDDING__ONNX_DIR`` picks another).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import scifact_data as sd
from bench.embed_precision import chunking, embedders
from bench.stats import load_avg, pct

Encode = Callable[[Sequence[str]], np.ndarray]
MAX_TOKENS = 256  # the old per-run budget of padded word pieces (embedding.max_batch_tokens)
BUCKETS = (16, 32, 64, 128, 256)


def short_texts(texts: list[str], n: int) -> list[str]:
    """Up to ``n`` sentences of 5-40 words from ``texts`` (spread evenly)."""
    out = [s.strip() for t in texts for s in re.split(r"(?<=[.!?])\s+", t)
           if 5 <= len(s.split()) <= 40]
    step = max(1, len(out) // max(1, n))
    return out[::step][:n]


def _run_padded(emb: Any, session: Any, encs: list[Any], width: int) -> np.ndarray:
    ids = np.zeros((len(encs), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encs):
        ids[row, :len(e.ids)] = e.ids
        mask[row, :len(e.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    out = session.run(None, {k: v for k, v in feeds.items() if k in emb._inputs})[0]
    return np.asarray(out, dtype=np.float32)


def _spread(emb: Any, session: Any, encs: list[Any], groups: list[list[int]],
            width: Callable[[list[int]], int]) -> np.ndarray:
    out = np.empty((len(encs), emb.dim), dtype=np.float32)
    runs = emb._executor().map(
        lambda idx: _run_padded(emb, session, [encs[i] for i in idx], width(idx)), groups)
    for idx, vecs in zip(groups, runs, strict=True):
        out[idx] = vecs
    return out


def batched(emb: Any, session: Any) -> Encode:
    """Main's embedder before 2026-11-28: token-bounded padded batches on the workers."""
    from engine.lab import token_batches

    def encode(texts: Sequence[str]) -> np.ndarray:
        encs = emb._tok.encode_batch([str(t).strip() for t in texts])
        lengths = [len(e.ids) for e in encs]
        if len(encs) <= 4 and sum(lengths) <= MAX_TOKENS:
            return _run_padded(emb, session, encs, max(lengths))
        per_worker = -(-sum(lengths) // emb._workers)
        budget = min(MAX_TOKENS, max(per_worker, max(lengths)))
        groups = token_batches(lengths, max_texts=64, max_tokens=budget)
        return _spread(emb, session, encs, groups,
                       lambda idx: max(lengths[i] for i in idx))
    return encode


def bucketed(emb: Any, session: Any) -> Encode:
    """Each text padded to the bucket of its own length, batched within its bucket."""
    def encode(texts: Sequence[str]) -> np.ndarray:
        encs = emb._tok.encode_batch([str(t).strip() for t in texts])
        widths = [next(b for b in BUCKETS if b >= len(e.ids)) for e in encs]
        groups: list[list[int]] = []
        for w in sorted(set(widths), reverse=True):
            idx = [i for i, x in enumerate(widths) if x == w]
            per = max(1, MAX_TOKENS // w)
            groups += [idx[i:i + per] for i in range(0, len(idx), per)]
        return _spread(emb, session, encs, groups, lambda idx: widths[idx[0]])
    return encode


def ways(embs: dict[str, Any]) -> dict[tuple[str, str], Encode]:
    out: dict[tuple[str, str], Encode] = {}
    for p, emb in embs.items():
        session = emb._int8() if p == "int8" else emb._session
        out[(p, "alone")] = emb.encode_documents
        out[(p, "batched")] = batched(emb, session)
        out[(p, "bucketed")] = bucketed(emb, session)
    return out


def shapes(encode: Encode, texts: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The texts' vectors each alone, and in every other shape (rows in text order)."""
    alone = np.stack([encode([t])[0] for t in texts])
    got = {"all": encode(texts)}
    for size in (2, 3, 7):
        got[f"calls of {size}"] = np.concatenate(
            [encode(texts[i:i + size]) for i in range(0, len(texts), size)])
    got["reversed"] = encode(texts[::-1])[::-1]
    order = list(range(len(texts)))
    random.Random(5).shuffle(order)
    shuffled = np.empty_like(alone)
    shuffled[order] = encode([texts[i] for i in order])
    got["shuffled"] = shuffled
    return alone, got


def determinism(all_ways: dict[tuple[str, str], Encode], sets: dict[str, list[str]]) -> bool:
    print("\n| document model | way | texts | shapes | rows equal to the bit | max abs diff "
          "| min cosine |")
    print("|---|---|---|---|---|---|---|")
    exact = True
    seen: dict[tuple[str, str, str], np.ndarray] = {}
    for (p, way), encode in all_ways.items():
        for label, texts in sets.items():
            alone, got = shapes(encode, texts)
            rows = np.stack(list(got.values()))
            equal = sum(int(a.tobytes() == b.tobytes()) for g in got.values()
                        for a, b in zip(alone, g, strict=True))
            diff = float(np.abs(rows - alone[None]).max())
            cos = float((rows * alone[None]).sum(2).min())
            print(f"| {p} | {way} | {label} {len(texts)} | {len(got)} | "
                  f"{equal}/{rows.shape[0] * rows.shape[1]} | {diff:.2e} | {cos:.7f} |")
            exact &= way != "alone" or equal == rows.shape[0] * rows.shape[1]
            seen[(p, way, label)] = got["all"]
    closeness(seen, sets)
    return exact


def closeness(seen: dict[tuple[str, str, str], np.ndarray], sets: dict[str, list[str]]
              ) -> None:
    """Cosine of each way's vectors (all texts in one call) to float32's, each text alone."""
    if ("float32", "alone", "chunks") not in seen:
        return
    print("\nCosine to the float32 model's vector of the text alone (all texts in one call)")
    print("| texts | document model | way | mean | p5 | min |")
    print("|---|---|---|---|---|---|")
    for label in sets:
        ref = seen[("float32", "alone", label)]
        for (p, way, lab), got in seen.items():
            if lab == label and (p, way) != ("float32", "alone"):
                cos = (got * ref).sum(1)
                print(f"| {label} | {p} | {way} | {cos.mean():.4f} | {pct(list(cos), 5):.4f} "
                      f"| {cos.min():.4f} |")


def speed(all_ways: dict[tuple[str, str], Encode], sets: dict[str, list[str]],
          rounds: int) -> None:
    rates: dict[tuple[str, str, str], list[float]] = {}
    before = load_avg()
    for _ in range(rounds):
        for label, texts in sets.items():
            for (p, way), encode in all_ways.items():
                t = time.perf_counter()
                encode(texts)
                rates.setdefault((label, p, way), []).append(len(texts) /
                                                             (time.perf_counter() - t))
    print(f"\nSpeed: every text in one call, {rounds} alternating rounds (load before "
          f"{before}, after {load_avg()})")
    print("| texts | document model | way | texts/s (median) | p95 round texts/s (slowest) "
          "| x batched |")
    print("|---|---|---|---|---|---|")
    for (label, p, way), r in rates.items():
        base = statistics.median(rates[(label, p, "batched")])
        print(f"| {label} | {p} | {way} | {statistics.median(r):.1f} | {pct(r, 5):.1f} | "
              f"{statistics.median(r) / base:.2f} |")


def store_vectors(folder: Path, embedder: Any) -> dict[bytes, bytes]:
    """Every chunk's vector bytes (model space), keyed by a hash of its embedding input."""
    from engine import ContextEngine
    from engine.lab import embed_inputs

    out: dict[bytes, bytes] = {}
    with ContextEngine.open(folder, embedder=embedder) as eng:
        after = 0
        while page := embed_inputs(eng.rt.vault, after, 500):
            vecs = eng.rt.vectors.vectors([r.id for r in page])
            for r in page:
                key = hashlib.sha256(repr(tuple(r)[1:]).encode("utf-8")).digest()
                out[key] = np.asarray(vecs[r.id], dtype="<f4").tobytes()
            after = page[-1].id
    return out


def stores(embedder: Any, docs: int) -> bool:
    """Two fresh stores of the same ``docs`` abstracts, fed in other batches: equal?"""
    from engine import ContextEngine

    every = list(sd.corpus())
    rows = every[::max(1, len(every) // docs)][:docs]
    work = Path(tempfile.mkdtemp(prefix="ctx-embed-determinism-"))
    try:
        with ContextEngine.open(work / "a", embedder=embedder) as eng:
            jobs = [eng.ingest(text=f"{t}\n\n{x}", title=t, external_id=sd.URI_PREFIX + d)
                    for d, t, x in rows]
            for j in jobs:
                eng.wait(j)
        with ContextEngine.open(work / "b", embedder=embedder) as eng:
            for d, t, x in reversed(rows):
                eng.ingest(text=f"{t}\n\n{x}", title=t, external_id=sd.URI_PREFIX + d,
                           wait=True)
        a, b = store_vectors(work / "a", embedder), store_vectors(work / "b", embedder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    same = sum(int(a[k] == b.get(k)) for k in a)
    diff = max((float(np.abs(np.frombuffer(a[k], "<f4") - np.frombuffer(b[k], "<f4")).max())
                for k in a if k in b), default=0.0)
    print(f"\nTwo fresh stores of {len(rows)} SciFact abstracts ({embedder.document_precision} "
          f"documents): {len(a)} / {len(b)} chunks, {same} vectors byte-identical, max abs "
          f"diff {diff:.2e}")
    for name, vecs in (("a (all queued)", a), ("b (one at a time, reversed)", b)):
        h = hashlib.sha256(b"".join(k + vecs[k] for k in sorted(vecs))).hexdigest()
        print(f"  store {name}: vectors sha256 {h}")
    return len(a) == len(b) == same


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=80, help="every N-th abstract's chunks")
    ap.add_argument("--sentences", type=int, default=240, help="short texts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stores", type=int, default=0,
                    help="also build two stores of this many abstracts and compare them")
    ap.add_argument("--no-arms", action="store_true",
                    help="only the engine's own way (no batched or bucketed arms, no speed)")
    args = ap.parse_args(argv)
    if not sd.prepared():
        return 2
    from bench.chunk_sweep import embed_texts
    chunks = embed_texts(chunking(), list(sd.corpus())[::args.every])
    sets = {"chunks": chunks, "sentences": short_texts(chunks, args.sentences)}
    embs = embedders()
    all_ways = ways(embs)
    if args.no_arms:
        all_ways = {k: v for k, v in all_ways.items() if k[1] == "alone"}
    print(f"{len(sets['chunks'])} SciFact chunk texts, {len(sets['sentences'])} sentences; "
          f"load {load_avg()}", file=sys.stderr)
    ok = determinism(all_ways, sets)
    if not args.no_arms:
        speed(all_ways, sets, args.rounds)
    if args.stores:
        ok &= stores(embs["int8"], args.stores)
    for emb in embs.values():
        emb.close()
    print(f"\nthe engine's vectors are batch-independent: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
