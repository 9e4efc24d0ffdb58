"""ctx beside its peer (LlamaIndex 0.14 + Chroma, ``bench.peer_llamaindex``) on SciFact
train, one after the other in one run on one machine, in one table.

ctx side (this venv, the default embedder: MiniLM on ONNX when ``make setup``
exported it, else torch): a new store; every abstract queued with
``ingest(text=..., external_id=...)`` as a caller would, timed until the last job
is done (the model loaded and warm before, as the peer's is); then for every
train claim ``build_context`` at 1000 tokens, timed (the query embedded on
every call: the query cache is off), and, untimed, ``search(k=100,
distinct_sources=True)`` for nDCG@10 and ``build_context`` at 500 and 2000.
Peer side: ``bench.peer_llamaindex`` run in its own venv (``--peer-python``)
with the same documents and claims. The load average is printed beside every
timing: on a shared machine compare only the ratios of one run.

The issue's targets: ctx ingests no slower than the peer (ingest ratio <= 1),
ctx build_context p95 within 1.5x of the peer's retrieve+pack p95.

    python -m bench.peer_compare [--docs N] [--limit N] [--peer-python PATH]
                                 [--peer-threads N] [--one-by-one] [--json FILE]
    python -m bench.peer_compare --interleaved [--store-cache DIR] [--peer-store DIR]

``--interleaved`` measures query latency only, on stores built before, with ctx
and the peer taking turns claim by claim (see ``interleaved``): the fair way to
read the p95 ratio on a machine whose speed drifts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import scifact_data as sd
from bench.scifact import ndcg10
from bench.stats import load_avg, machine_state, pct

BUDGETS = (500, 1000, 2000)
TIMED = 1000
PEER_PYTHON = Path("/tmp/peer-venv/bin/python")



def ctx_ingest(eng: Any, docs: int | None, one_by_one: bool) -> float:
    """Seconds to store every abstract, queued as a caller would (or one at a time)."""
    t0 = time.perf_counter()
    last = None
    for did, title, text in sd.corpus(docs):
        body = f"{title}\n\n{text}" if title else text
        last = eng.ingest(text=body, title=title or None, external_id=sd.URI_PREFIX + did,
                          wait=one_by_one)
    if last:
        eng.wait(last)
    seconds = time.perf_counter() - t0
    states = {j.state for j in eng.jobs()}
    if states != {"done"}:
        raise SystemExit(f"ingest jobs ended {states}")
    return seconds


def ctx_queries(eng: Any, claims: list[tuple[str, str]], qrels: dict[str, dict[str, int]]
                ) -> dict[str, Any]:
    lat: list[float] = []
    nd: list[float] = []
    pay: dict[int, list[float]] = {b: [] for b in BUDGETS}
    for qid, text in claims:
        rel = set(qrels[qid])
        for b in (TIMED, *[b for b in BUDGETS if b != TIMED]):
            t = time.perf_counter()
            payload = eng.build_context(text, budget=b)
            if b == TIMED:
                lat.append((time.perf_counter() - t) * 1000)
            got = {d for item in payload.items if (d := sd.doc_id(item.source))}
            pay[b].append(float(bool(got & rel)))
        hits = eng.search(text, k=100, distinct_sources=True)
        nd.append(ndcg10([d for h in hits if (d := sd.doc_id(h.source))], qrels[qid]))
    return {"claims": len(claims), "ndcg@10": statistics.mean(nd),
            "payload": {str(b): statistics.mean(v) for b, v in pay.items()},
            "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95),
            "load_avg_after_queries": load_avg()}


def run_ctx(args: argparse.Namespace) -> dict[str, Any]:
    from engine import ContextEngine

    emb = sd.make_embedder("minilm")
    qrels = sd.qrels()
    with (tempfile.TemporaryDirectory(prefix="ctx-peer-compare-") as tmp,
          ContextEngine.open(Path(tmp) / "store", embedder=emb) as eng):
        before = load_avg()
        ingest_s = ctx_ingest(eng, args.docs, args.one_by_one)
        after = load_avg()
        chunks = eng.rt.vault.chunk_count()
        print(f"ctx: ingest {ingest_s:.1f} s, {chunks} chunks (load {before} -> {after})",
              file=sys.stderr)
        fair = sd.covered_claims(eng, qrels)
        claims = [(q, t) for q, t in sd.queries().items() if q in fair]
        if args.limit:
            claims = claims[: args.limit]
        rep = ctx_queries(eng, claims, qrels)
    return {**rep, "ingest_s": ingest_s, "units": chunks, "embedder": type(emb).__name__,
            "load_avg_before_ingest": before, "load_avg_after_ingest": after,
            "one_by_one": args.one_by_one}


def run_peer(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="peer-json-") as tmp:
        out = Path(tmp) / "peer.json"
        cmd = [str(args.peer_python), "-m", "bench.peer_llamaindex", "--json", str(out)]
        for flag, value in (("--docs", args.docs), ("--limit", args.limit),
                            ("--threads", args.peer_threads)):
            if value:
                cmd += [flag, str(value)]
        env = {**os.environ, "PYTHONPATH": str(sd.REPO)}
        subprocess.run(cmd, cwd=sd.REPO, env=env, check=True)
        rep = json.loads(out.read_text())
    return {"claims": rep["claims"], "ndcg@10": rep["ndcg@10"], "payload": rep["payload"],
            "p50_ms": rep["retrieve_pack_p50_ms"], "p95_ms": rep["retrieve_pack_p95_ms"],
            "ingest_s": rep["ingest_s"], "units": rep["nodes"],
            "torch_threads": rep.get("torch_threads"),
            "load_avg_before_ingest": rep["load_avg_before_ingest"],
            "load_avg_after_ingest": rep["load_avg_after_ingest"],
            "load_avg_after_queries": rep["load_avg_after_queries"]}


def interleaved(args: argparse.Namespace) -> dict[str, Any]:
    """Query latency only, ctx and the peer taking turns claim by claim on stores built
    before (ctx: ``bench.scifact``'s cached store under ``--store-cache``; the peer: its
    Chroma index under ``--peer-store``, built there on first use). The shared VM's
    cores change speed by up to 2x within minutes (``bench.stats.cpu_probe``), so the
    two halves of a sequential run can meet different machines; taking turns, both
    meet the same one. Each claim's order alternates (ctx first on even claims)."""
    import shutil

    from engine import ContextEngine

    emb = sd.make_embedder("minilm")
    cached, _ = sd.prepare_store(emb, args.store_cache, args.docs)
    cmd = [str(args.peer_python), "-m", "bench.peer_llamaindex", "--serve",
           "--store", str(args.peer_store)]
    for flag, value in (("--docs", args.docs), ("--threads", args.peer_threads)):
        if value:
            cmd += [flag, str(value)]
    env = {**os.environ, "PYTHONPATH": str(sd.REPO)}
    qrels = sd.qrels()
    lat: dict[str, list[float]] = {"ctx": [], "peer": []}
    with (tempfile.TemporaryDirectory(prefix="ctx-peer-interleaved-") as tmp,
          subprocess.Popen(cmd, cwd=sd.REPO, env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True) as peer):
        assert peer.stdin is not None and peer.stdout is not None
        for line in peer.stdout:  # anything the peer's libraries print comes first
            if line.startswith('{"ready"'):
                break
        else:
            raise SystemExit("the peer did not start (see its output above)")

        def peer_ms(text: str) -> float:
            assert peer.stdin is not None and peer.stdout is not None
            peer.stdin.write(json.dumps({"text": text}) + "\n")
            peer.stdin.flush()
            return float(json.loads(peer.stdout.readline())["ms"])

        shutil.copytree(cached, Path(tmp) / "store")
        with ContextEngine.open(Path(tmp) / "store", embedder=emb) as eng:
            fair = sd.covered_claims(eng, qrels)
            claims = [t for q, t in sd.queries().items() if q in fair]
            if args.limit:
                claims = claims[: args.limit]
            for text in claims[:5]:  # warm both
                eng.build_context(text, budget=TIMED)
                peer_ms(text)
            before = machine_state()
            for i, text in enumerate(claims):
                for side in (("ctx", "peer") if i % 2 == 0 else ("peer", "ctx")):
                    if side == "peer":
                        lat["peer"].append(peer_ms(text))
                        continue
                    t = time.perf_counter()
                    eng.build_context(text, budget=TIMED)
                    lat["ctx"].append((time.perf_counter() - t) * 1000)
            after = machine_state()
        peer.stdin.close()
    rep = {side: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for side, v in lat.items()}
    print(f"\nSciFact train, {len(claims)} claims at {TIMED} tokens, ctx and the peer taking "
          f"turns (stores built before); load {before} -> {after}")
    print("| system | p50 ms | p95 ms |\n|---|---|---|")
    for name, side in (("ctx build_context", "ctx"), ("LlamaIndex retrieve+pack", "peer")):
        print(f"| {name} | {rep[side]['p50_ms']:.1f} | {rep[side]['p95_ms']:.1f} |")
    print(f"ctx / peer: query p95 {rep['ctx']['p95_ms'] / rep['peer']['p95_ms']:.2f}x "
          f"(target <= 1.5), p50 {rep['ctx']['p50_ms'] / rep['peer']['p50_ms']:.2f}x")
    return {**rep, "claims": len(claims), "load": [before, after],
            "embedder": type(emb).__name__}


def print_table(ctx: dict[str, Any] | None, peer: dict[str, Any] | None, docs: str) -> None:
    print(f"\nSciFact train, {docs} abstracts: ctx and its peer on this machine, one run")
    print("| system | ingest s | chunks / nodes | nDCG@10 | in payload @500 | @1000 | @2000 "
          "| query p50 ms | p95 ms | load avg (ingest; after queries) |")
    print("|" + "---|" * 10)
    for name, r in (("ctx build_context", ctx), ("LlamaIndex retrieve+pack", peer)):
        if r is None:
            continue
        p = r["payload"]
        print(f"| {name} | {r['ingest_s']:.0f} | {r['units']} | {r['ndcg@10']:.3f} "
              f"| {p['500']:.3f} | {p['1000']:.3f} | {p['2000']:.3f} | {r['p50_ms']:.1f} "
              f"| {r['p95_ms']:.1f} | {r['load_avg_before_ingest']} -> "
              f"{r['load_avg_after_ingest']}; {r['load_avg_after_queries']} |")
    if ctx and peer:
        print(f"ctx / peer: ingest {ctx['ingest_s'] / peer['ingest_s']:.2f}x (target <= 1), "
              f"query p95 {ctx['p95_ms'] / peer['p95_ms']:.2f}x (target <= 1.5), "
              f"p50 {ctx['p50_ms'] / peer['p50_ms']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, help="the fixed N-document subset (default: all)")
    ap.add_argument("--limit", type=int, help="only the first N covered claims")
    ap.add_argument("--peer-python", type=Path, default=PEER_PYTHON,
                    help="the peer venv's python (see bench/peer_llamaindex.py)")
    ap.add_argument("--peer-threads", type=int, help="torch threads for the peer")
    ap.add_argument("--one-by-one", action="store_true",
                    help="ctx: wait for each ingest before the next (no joined jobs)")
    ap.add_argument("--skip", choices=("ctx", "peer"), help="run only the other side")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--interleaved", action="store_true",
                    help="query latency only, ctx and the peer taking turns per claim")
    ap.add_argument("--store-cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-bench",
                    help="--interleaved: ctx's store cache (as bench.scifact's)")
    ap.add_argument("--peer-store", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench" / "peer-chroma",
                    help="--interleaved: the peer's index (built there on first use)")
    args = ap.parse_args(argv)
    if not sd.prepared():
        return 2
    if args.interleaved:
        rep = interleaved(args)
        if args.json:
            Path(args.json).write_text(json.dumps({"interleaved": rep}, indent=2))
        return 0
    ctx = run_ctx(args) if args.skip != "ctx" else None
    peer = run_peer(args) if args.skip != "peer" else None
    print_table(ctx, peer, str(args.docs or "all 5,183"))
    if args.json:
        Path(args.json).write_text(json.dumps({"ctx": ctx, "peer": peer}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
