"""LoCoMo evidence recall at budget (see ../shared/data/locomo/NOTICE.md).

One store per conversation; each session ingested as a conversation source
with its date and per-turn speaker; every question of categories 1-4 asked
through build_context at budgets 500, 1000, 2000. Prints evidence recall at
budget and recall@10 per split beside the NOTICE's baselines, recall per
question category, and latency (p50/p95 of build_context, with the query
embedded on every call: the engine's query cache is off here, and the median
time of each stage). ``--digest`` also prints a sha256 over every payload and
search result (``bench.digest``, run under PYTHONHASHSEED=0): two runs that print
the same digests returned the same payloads byte for byte.

    python -m bench.locomo [--split dev|test|both] [--embedder minilm|fake] [--limit N]
                           [--store-cache DIR] [--conv I ...] [--threads N] [--stride N]
                           [--json FILE] [--digest]

``--store-cache DIR`` keeps each conversation's ingested store under DIR (by
conversation and embedder) and reuses a copy of it on later runs, so that
iterating on ranking and packing skips ingestion. The key is fixed by the
environment variables set below, so a cached store always opens.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.digest import RunDigest, fixed_hash_seed
from bench.models import embedding_config, vectors_tag
from bench.stats import pct

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
SPLITS = {"dev": range(5), "test": range(5, 10)}
BUDGETS = (500, 1000, 2000)
BASELINES = {
    "test": {"BM25": (0.564, 0.565, 0.638, 0.708), "dense": (0.456, 0.444, 0.556, 0.669),
             "hybrid RRF": (0.589, 0.588, 0.660, 0.777)},
    "dev": {"BM25": (0.584, 0.580, 0.664, 0.729), "dense": (0.536, 0.522, 0.641, 0.735),
            "hybrid RRF": (0.628, 0.610, 0.694, 0.793)},
}
CACHE_VERSION = "1"  # bump when the ingestion path changes what a store holds
_WS = re.compile(r"\s+")


def parse_session_date(text: str) -> float | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def sessions(conv: dict[str, Any]) -> list[tuple[int, float | None, list[dict[str, Any]]]]:
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if not m or not isinstance(turns, list):
            continue
        n = int(m.group(1))
        when = parse_session_date(conv.get(f"session_{n}_date_time", ""))
        out.append((n, when, turns))
    return sorted(out, key=lambda s: s[0])


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def turn_texts(sample: dict[str, Any]) -> tuple[dict[str, str], float]:
    """dia_id -> turn text, and the bench's ``now`` (a day after the last session)."""
    texts: dict[str, str] = {}
    last = 0.0
    for _, when, turns in sessions(sample["conversation"]):
        last = max(last, when or 0.0)
        for t in turns:
            texts[t["dia_id"]] = t["text"]
    return texts, last + 86400.0


def ingest(sample: dict[str, Any], embedder: Any, workdir: Path) -> float:
    """Ingest one conversation into a new store at ``workdir``; returns seconds spent."""
    from engine import ContextEngine

    t0 = time.perf_counter()
    with ContextEngine.open(workdir, embedder=embedder) as eng:
        jobs = []
        for n, when, turns in sessions(sample["conversation"]):
            rows = []
            for t in turns:
                row = {"speaker": t["speaker"], "text": t["text"], "id": t["dia_id"]}
                if t.get("blip_caption"):
                    row["image_caption"] = t["blip_caption"]
                rows.append(row)
            jobs.append(eng.ingest_conversation(rows, title=f"session {n}",
                                                uri=f"locomo:{sample['sample_id']}:{n}",
                                                session_time=when))
        for j in jobs:
            assert eng.wait(j).state == "done"
    return time.perf_counter() - t0


def _cache_dir(cache: Path, sample: dict[str, Any], embedder_name: str) -> Path:
    tag = hashlib.sha256(json.dumps(sample["conversation"], sort_keys=True).encode()
                         ).hexdigest()[:12]
    safe = re.sub(r"[^\w.-]+", "_", f"{sample['sample_id']}-{embedder_name}-{tag}")
    return cache / f"v{CACHE_VERSION}-{safe}"


def prepare_store(sample: dict[str, Any], embedder: Any, workdir: Path,
                  cache: Path | None) -> float:
    """A store for ``sample`` at ``workdir``: a copy of the cached one, or a new ingest.

    Runs mutate a store (access statistics), so each run works on a fresh copy.
    Returns the ingestion seconds (0 when the cache served it).
    """
    if cache is None:
        return ingest(sample, embedder, workdir)
    cached = _cache_dir(cache, sample, vectors_tag(embedder))
    seconds = 0.0
    if not (cached / "READY").exists():
        shutil.rmtree(cached, ignore_errors=True)
        building = cached.with_name(cached.name + ".tmp")
        shutil.rmtree(building, ignore_errors=True)
        seconds = ingest(sample, embedder, building / "store")
        (building / "READY").write_text(f"{seconds:.1f}\n")
        building.rename(cached)
    shutil.copytree(cached / "store", workdir)
    return seconds


def evaluate(eng: Any, sample: dict[str, Any], texts: dict[str, str], now: float,
             limit: int | None, stride: int = 1, digest: RunDigest | None = None
             ) -> dict[str, Any]:
    questions = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)][::stride]
    if limit:
        questions = questions[:limit]
    recall_at: dict[int, list[float]] = {b: [] for b in BUDGETS}
    by_cat: dict[int, list[float]] = {}
    r10: list[float] = []
    lat: list[float] = []
    stages: dict[str, list[float]] = {}
    for q in questions:
        evidence = [e for e in q["evidence"] if e in texts]
        if not evidence:
            continue
        hits = eng.search(q["question"], k=10)
        if digest is not None:
            digest.search(q["question"], hits)
        found = {h.meta.get("turn_id") for h in hits}
        r10.append(sum(e in found for e in evidence) / len(evidence))
        for b in BUDGETS:
            t = time.perf_counter()
            payload = eng.build_context(q["question"], budget=b, now=now)
            lat.append((time.perf_counter() - t) * 1000)
            if digest is not None:
                digest.payload(q["question"], payload)
            for stage, ms in payload.timings.items():
                stages.setdefault(stage, []).append(ms)
            assert payload.total_tokens <= b
            ctx = norm(payload.context)
            share = sum(norm(texts[e]) in ctx for e in evidence) / len(evidence)
            recall_at[b].append(share)
            if b == 1000:
                by_cat.setdefault(int(q["category"]), []).append(share)
    return {"recall": recall_at, "r10": r10, "lat": lat, "stages": stages, "by_cat": by_cat}


def run_conversation(sample: dict[str, Any], embedder: Any, workdir: Path, limit: int | None,
                     cache: Path | None = None, stride: int = 1,
                     digest: RunDigest | None = None) -> dict[str, Any]:
    from engine import ContextEngine

    texts, now = turn_texts(sample)
    ingest_s = prepare_store(sample, embedder, workdir, cache)
    with ContextEngine.open(workdir, embedder=embedder) as eng:
        res = evaluate(eng, sample, texts, now, limit, stride, digest)
    return {**res, "ingest_s": ingest_s, "turns": len(texts)}


def _table(split: str, n: int, row: tuple[float, ...], embedder: str) -> None:
    print(f"\nLoCoMo {split} split ({n} questions, categories 1-4, embedder {embedder})")
    print("| method | recall@10 | ctx@500 | ctx@1000 | ctx@2000 |")
    print("|---|---|---|---|---|")
    for name, base in BASELINES[split].items():
        print(f"| {name} (NOTICE) | " + " | ".join(f"{v:.3f}" for v in base) + " |")
    print("| **ctx build_context** | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    hyb = BASELINES[split]["hybrid RRF"]
    print("| ratio vs hybrid | " + " | ".join(f"{v / h:.2f}x" for v, h in zip(row, hyb)) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--limit", type=int, help="questions per conversation (quick runs)")
    ap.add_argument("--stride", type=int, default=1,
                    help="every Nth question of each conversation (an even sample, quick runs)")
    ap.add_argument("--conv", type=int, nargs="*", help="only these conversation indices")
    ap.add_argument("--store-cache", type=Path,
                    help="keep ingested stores here and reuse them on later runs")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads for the query embedder (0: the product's default)")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--digest", action="store_true",
                    help="print a sha256 over every payload and search result of each split")
    args = ap.parse_args(argv)
    if args.digest:
        fixed_hash_seed("bench.locomo", sys.argv[1:] if argv is None else argv)
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}", file=sys.stderr)
        return 2
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    # Every build embeds its query: latency includes it, as the budget demands.
    os.environ.setdefault("CTX__EMBEDDING__QUERY_CACHE_SIZE", "0")
    os.environ["CTX_EMBEDDER"] = args.embedder
    from engine.lab import make_embedder

    embedder = make_embedder(embedding_config(model=args.embedder, threads=args.threads))
    embedder.encode(["warm up"])
    data = json.loads(DATA.read_text(encoding="utf-8"))
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    if args.store_cache:
        args.store_cache.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    for split in splits:
        agg: dict[str, Any] = {"recall": {b: [] for b in BUDGETS}, "r10": [], "lat": [],
                               "ingest_s": 0.0, "stages": {}, "by_cat": {}}
        digest = RunDigest() if args.digest else None
        for idx in SPLITS[split]:
            if args.conv and idx not in args.conv:
                continue
            with tempfile.TemporaryDirectory(prefix="ctx-locomo-") as tmp:
                res = run_conversation(data[idx], embedder, Path(tmp) / "store", args.limit,
                                       args.store_cache, args.stride, digest)
            for b in BUDGETS:
                agg["recall"][b] += res["recall"][b]
            for key in ("stages", "by_cat"):
                for name, values in res[key].items():
                    agg[key].setdefault(name, []).extend(values)
            agg["r10"] += res["r10"]
            agg["lat"] += res["lat"]
            agg["ingest_s"] += res["ingest_s"]
            print(f"  {split} conv {idx}: {len(res['r10'])} questions, "
                  f"ctx@1000 {statistics.mean(res['recall'][1000]):.3f}", file=sys.stderr)
        n = len(agg["r10"])
        if not n:
            continue
        row = (statistics.mean(agg["r10"]),
               *(statistics.mean(agg["recall"][b]) for b in BUDGETS))
        cats = {c: statistics.mean(v) for c, v in sorted(agg["by_cat"].items())}
        stages = {s: statistics.median(v) for s, v in agg["stages"].items()}
        report[split] = {"questions": n, "recall@10": row[0],
                         **{f"ctx@{b}": v for b, v in zip(BUDGETS, row[1:])},
                         "ctx@1000_by_category": cats,
                         "build_p50_ms": pct(agg["lat"], 50), "build_p95_ms": pct(agg["lat"], 95),
                         "stage_median_ms": stages, "ingest_s": agg["ingest_s"]}
        _table(split, n, row, args.embedder)
        print("ctx@1000 by category: " + ", ".join(
            f"{c}: {v:.3f} ({len(agg['by_cat'][c])})" for c, v in cats.items()))
        print(f"build_context latency over {len(agg['lat'])} calls: "
              f"p50 {pct(agg['lat'], 50):.1f} ms, p95 {pct(agg['lat'], 95):.1f} ms; "
              f"ingest {agg['ingest_s']:.1f} s")
        print("stage medians (ms): " + ", ".join(f"{s} {v:.1f}" for s, v in stages.items()))
        if digest is not None:
            for line in digest.lines():
                print(f"{split} {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
