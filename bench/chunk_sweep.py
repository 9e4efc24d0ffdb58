"""Chunk size and overlap by quality per embedding second, on SciFact train.

For each chunking setting (``target/max/overlap`` cl100k tokens):

- embedding work of the whole corpus (5,183 abstracts, chunked as ingestion
  chunks them, each chunk as the model sees it: title and heading, then text):
  chunks, word pieces the model computes (cut at its 256), and embedding
  seconds: every setting's chunks of one fixed sample of abstracts (every
  ``--sample-every``-th) are embedded with the real model in the same run,
  settings interleaved, the fastest of ``--rounds`` taken, and scaled to the
  corpus by word pieces. Word pieces do not depend on the machine's load;
  seconds do, so compare them only within one run (the load average is printed);
- quality: the corpus subset of ``--docs`` abstracts (every cited one, the rest
  spread over the file: ``bench.scifact_data.corpus``) ingested through the
  public API with that setting, and every ``--stride``-th train claim asked of
  it: nDCG@10 and Recall@100 of ctx ``search`` (distinct sources), a relevant
  abstract in ctx's payload at 500/1000/2000 tokens, and the RRF k=60 row of the
  same store (``bench.scifact.evaluate``).

Vectors are shared between settings through an in-process cache keyed by the
exact text (an abstract that fits one chunk is embedded once for all the
settings that leave it whole); the embedding seconds above never use it.

    python -m bench.chunk_sweep [--settings 200/240/30,200/240/0,...] [--docs N]
                                [--stride N] [--store-cache DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench import scifact_data as sd
from bench.stats import load_avg

DEFAULT_SETTINGS = "200/240/30,200/240/0,300/360/0,400/480/0"
KEYS = ("target_tokens", "max_tokens", "overlap_tokens")



def parse(setting: str) -> dict[str, int]:
    parts = [int(p) for p in setting.split("/")]
    if len(parts) != 3:
        raise SystemExit(f"a setting is target/max/overlap, not {setting!r}")
    return dict(zip(KEYS, parts, strict=True))


@contextmanager
def chunking_env(cfg: dict[str, int]) -> Iterator[None]:
    """The setting as CTX__CHUNKING__* variables (so that the store cache is keyed by it)."""
    names = {k: f"CTX__CHUNKING__{k.upper()}" for k in KEYS}
    old = {k: os.environ.get(n) for k, n in names.items()}
    os.environ.update({names[k]: str(v) for k, v in cfg.items()})
    try:
        yield
    finally:
        for k, n in names.items():
            if old[k] is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = old[k]  # type: ignore[assignment]


class CachedEmbedder:
    """The real embedder, with vectors of texts seen before served from memory (queries
    and documents apart: documents may come from the int8 model)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.backend = getattr(inner, "backend", "?")
        self.document_precision = getattr(inner, "document_precision", "float32")
        self._cache: dict[str, np.ndarray] = {}
        self._docs: dict[str, np.ndarray] = {}
        self.computed = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, self._cache, self.inner.encode)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        from engine.lab import encode_documents

        return self._cached(texts, self._docs, lambda t: encode_documents(self.inner, t))

    def _cached(self, texts: Sequence[str], cache: dict[str, np.ndarray], encode: Any
                ) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in cache))
        if todo:
            for t, v in zip(todo, encode(todo), strict=True):
                cache[t] = v
            self.computed += len(todo)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([cache[t] for t in texts])

    def close(self) -> None:
        pass  # the inner model belongs to this bench, closed at exit


def embed_texts(cfg: dict[str, int], docs: Sequence[tuple[str, str, str]]) -> list[str]:
    """Every chunk of ``docs`` as the model sees it, chunked with setting ``cfg``."""
    from engine import TokenCounter
    from engine.lab import ChunkingConfig, chunk_document, embed_text, load_text

    ccfg = ChunkingConfig(**cfg)
    counter = TokenCounter.shared()
    out = []
    for did, title, text in docs:
        doc = load_text(f"{title}\n\n{text}" if title else text, title=title or None,
                        uri=sd.URI_PREFIX + did)
        out += [embed_text(doc.title, ch.heading, ch.kind, ch.text)
                for ch in chunk_document(doc, ccfg, counter)]
    return out


def word_pieces(texts: Sequence[str], tokenizer: Any) -> int:
    return sum(len(e.ids) for e in tokenizer.encode_batch(list(texts)))


def work(settings: list[dict[str, int]], emb: Any, every: int, rounds: int
         ) -> list[dict[str, Any]]:
    """Corpus chunks and word pieces per setting; embedding seconds from a timed sample."""
    from tokenizers import Tokenizer

    from engine.lab import encode_documents

    folder = getattr(emb, "folder", None)
    tok = Tokenizer.from_file(str(Path(folder) / "tokenizer.json")) if folder else None
    if tok is not None:
        tok.enable_truncation(max_length=256)
    corpus = list(sd.corpus())
    sample = corpus[::every]
    rows: list[dict[str, Any]] = []
    for cfg in settings:
        texts = embed_texts(cfg, corpus)
        stexts = embed_texts(cfg, sample)
        rows.append({"setting": cfg, "corpus_chunks": len(texts), "sample_chunks": len(stexts),
                     "corpus_wp": word_pieces(texts, tok) if tok else None,
                     "sample_wp": word_pieces(stexts, tok) if tok else None,
                     "sample_texts": stexts, "sample_s": []})
    for _ in range(rounds):
        for row in rows:
            t = time.perf_counter()
            encode_documents(emb, row["sample_texts"])  # as ingest embeds them
            row["sample_s"].append(time.perf_counter() - t)
    for row in rows:
        best = min(row["sample_s"])
        scale = (row["corpus_wp"] / row["sample_wp"] if row["sample_wp"]
                 else row["corpus_chunks"] / row["sample_chunks"])
        row["corpus_embed_s"] = best * scale
        del row["sample_texts"]
    return rows


def quality(cfg: dict[str, int], emb: CachedEmbedder, cache: Path, docs: int | None,
            stride: int) -> dict[str, Any]:
    from bench.scifact import evaluate
    from engine import ContextEngine

    with chunking_env(cfg):
        store, ingest_s = sd.prepare_store(emb, cache, docs)
        qrels = sd.qrels()
        with tempfile.TemporaryDirectory(prefix="ctx-sweep-") as tmp:
            work_dir = Path(tmp) / "store"
            shutil.copytree(store, work_dir)
            with ContextEngine.open(work_dir, embedder=emb) as eng:
                chunks = eng.rt.vault.chunk_count()
                fair = sd.covered_claims(eng, qrels)
                claims = [(q, t) for q, t in sd.queries().items() if q in fair][::stride]
                rep = evaluate(eng, claims, qrels)
    return {"store_chunks": chunks, "ingest_s": ingest_s, **rep}


def conversation_check() -> str:
    """Whether a setting can change conversation chunks: a turn is one chunk unless it is
    over ``max_tokens`` (``engine.ingest.conversation``); LoCoMo's longest turn decides."""
    from engine import TokenCounter

    path = sd.REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
    if not path.exists():
        return "LoCoMo data not found: conversation check skipped"
    counter = TokenCounter.shared()
    sizes = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                sizes += [counter.count(f"{t['speaker']}: {t.get('text', '')} "
                                        f"{t.get('blip_caption') or ''}") for t in turns]
    return (f"LoCoMo: {len(sizes)} turns, the longest {max(sizes)} tokens (speaker and "
            f"caption included): every setting with max_tokens >= {max(sizes)} leaves "
            "conversation chunks as they are. Transcripts are chunked by engine.recall.chunks "
            "(its own config), not by these settings.")


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| target/max/overlap | corpus chunks | word pieces (M) | embed s (corpus) "
          "| store chunks | nDCG@10 | Recall@100 | in payload @500 | @1000 | @2000 "
          "| RRF nDCG@10 | nDCG@10 per embed-min |")
    print("|" + "---|" * 12)
    for r in rows:
        s = r["setting"]
        q = r.get("quality")
        name = f"{s['target_tokens']}/{s['max_tokens']}/{s['overlap_tokens']}"
        wp = f"{r['corpus_wp'] / 1e6:.2f}" if r["corpus_wp"] else "-"
        head = f"| {name} | {r['corpus_chunks']} | {wp} | {r['corpus_embed_s']:.0f} |"
        if q is None:
            print(head + " - |" * 8)
            continue
        ctx, rrf, pay = q["rows"]["ctx"], q["rows"]["RRF k=60"], q["payload"]["ctx"]
        per_min = ctx["ndcg@10"] / (r["corpus_embed_s"] / 60)
        print(f"{head} {q['store_chunks']} | {ctx['ndcg@10']:.3f} | {ctx['recall@100']:.3f} | "
              f"{pay['500']:.3f} | {pay['1000']:.3f} | {pay['2000']:.3f} | "
              f"{rrf['ndcg@10']:.3f} | {per_min:.3f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", default=DEFAULT_SETTINGS,
                    help="comma-separated target/max/overlap (cl100k tokens)")
    ap.add_argument("--docs", type=int, default=1500,
                    help="abstracts in the quality stores (0: the whole corpus)")
    ap.add_argument("--stride", type=int, default=2, help="every N-th train claim")
    ap.add_argument("--sample-every", type=int, default=20,
                    help="the timed sample: every N-th abstract of the corpus")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work-only", action="store_true", help="embedding work only, no stores")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench" / "chunk-sweep")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if not sd.prepared():
        return 2
    settings = [parse(s) for s in args.settings.split(",") if s.strip()]
    emb = sd.make_embedder("minilm")
    print(f"embedder {type(emb).__name__}; load {load_avg()}", file=sys.stderr)
    rows = work(settings, emb, args.sample_every, args.rounds)
    print(f"embedding work measured; load {load_avg()}", file=sys.stderr)
    cached = CachedEmbedder(emb)
    args.store_cache.mkdir(parents=True, exist_ok=True)
    for row in rows if not args.work_only else []:
        row["quality"] = quality(row["setting"], cached, args.store_cache, args.docs or None,
                                 args.stride)
        row["quality"]["load_avg"] = load_avg()
        print(f"{row['setting']}: done; load {load_avg()}", file=sys.stderr)
        if args.json:  # after every setting, so that a long run cut short keeps its rows
            Path(args.json).write_text(json.dumps(rows, indent=2))
    print(f"\nSciFact train chunking sweep ({type(emb).__name__}; quality on "
          f"{args.docs or 'all'} abstracts, every {args.stride}th claim); load {load_avg()}")
    print_table(rows)
    print(conversation_check())
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
