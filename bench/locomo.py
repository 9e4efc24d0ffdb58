"""LoCoMo evidence recall at budget (see ../shared/data/locomo/NOTICE.md).

One store per conversation; each session ingested as a conversation source
with its date and per-turn speaker; every question of categories 1-4 asked
through build_context at budgets 500, 1000, 2000. Prints evidence recall at
budget and recall@10 per split beside the NOTICE's baselines, and latency.

    python -m bench.locomo [--split dev|test|both] [--embedder minilm|fake] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
SPLITS = {"dev": range(0, 5), "test": range(5, 10)}
BUDGETS = (500, 1000, 2000)
BASELINES = {
    "test": {"BM25": (0.564, 0.565, 0.638, 0.708), "dense": (0.456, 0.444, 0.556, 0.669),
             "hybrid RRF": (0.589, 0.588, 0.660, 0.777)},
    "dev": {"BM25": (0.584, 0.580, 0.664, 0.729), "dense": (0.536, 0.522, 0.641, 0.735),
            "hybrid RRF": (0.628, 0.610, 0.694, 0.793)},
}
_WS = re.compile(r"\s+")


def parse_session_date(text: str) -> float | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc).timestamp()
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


def run_conversation(sample: dict[str, Any], embedder: Any, workdir: Path, limit: int | None
                     ) -> dict[str, Any]:
    from engine.facade import ContextEngine

    conv = sample["conversation"]
    turn_text: dict[str, str] = {}
    last_time = 0.0
    eng = ContextEngine.open(workdir, embedder=embedder)
    t0 = time.perf_counter()
    jobs = []
    for n, when, turns in sessions(conv):
        rows = []
        for t in turns:
            row = {"speaker": t["speaker"], "text": t["text"], "id": t["dia_id"]}
            if t.get("blip_caption"):
                row["image_caption"] = t["blip_caption"]
            rows.append(row)
            turn_text[t["dia_id"]] = t["text"]
        last_time = max(last_time, when or 0.0)
        jobs.append(eng.ingest_conversation(rows, title=f"session {n}",
                                            uri=f"locomo:{sample['sample_id']}:{n}",
                                            session_time=when))
    for j in jobs:
        assert eng.wait(j)["state"] == "done"
    ingest_s = time.perf_counter() - t0
    now = last_time + 86400.0
    questions = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    if limit:
        questions = questions[:limit]
    recall_at = {b: [] for b in BUDGETS}
    r10: list[float] = []
    lat: list[float] = []
    for q in questions:
        evidence = [e for e in q["evidence"] if e in turn_text]
        if not evidence:
            continue
        hits = eng.search(q["question"], k=10)
        found = {h.meta.get("turn_id") for h in hits}
        r10.append(sum(e in found for e in evidence) / len(evidence))
        for b in BUDGETS:
            t = time.perf_counter()
            payload = eng.build_context(q["question"], budget=b, now=now)
            lat.append((time.perf_counter() - t) * 1000)
            assert payload.total_tokens <= b
            ctx = norm(payload.context)
            recall_at[b].append(sum(norm(turn_text[e]) in ctx for e in evidence) / len(evidence))
    eng.close()
    return {"recall": recall_at, "r10": r10, "lat": lat, "ingest_s": ingest_s,
            "turns": len(turn_text)}


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--limit", type=int, help="questions per conversation (quick runs)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"LoCoMo data not found at {DATA}", file=sys.stderr)
        return 2
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = args.embedder
    from engine.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder

    embedder = make_embedder(EmbeddingConfig(model=args.embedder))
    data = json.loads(DATA.read_text(encoding="utf-8"))
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    report: dict[str, Any] = {}
    for split in splits:
        agg = {"recall": {b: [] for b in BUDGETS}, "r10": [], "lat": [], "ingest_s": 0.0}
        for idx in SPLITS[split]:
            with tempfile.TemporaryDirectory(prefix="ctx-locomo-") as tmp:
                res = run_conversation(data[idx], embedder, Path(tmp) / "store", args.limit)
            for b in BUDGETS:
                agg["recall"][b] += res["recall"][b]
            agg["r10"] += res["r10"]
            agg["lat"] += res["lat"]
            agg["ingest_s"] += res["ingest_s"]
            print(f"  {split} conv {idx}: {len(res['r10'])} questions, "
                  f"ctx@1000 {statistics.mean(res['recall'][1000]):.3f}", file=sys.stderr)
        n = len(agg["r10"])
        row = (statistics.mean(agg["r10"]),
               *(statistics.mean(agg["recall"][b]) for b in BUDGETS))
        report[split] = {"questions": n, "recall@10": row[0],
                         **{f"ctx@{b}": v for b, v in zip(BUDGETS, row[1:])},
                         "build_p50_ms": pct(agg["lat"], 50), "build_p95_ms": pct(agg["lat"], 95),
                         "ingest_s": agg["ingest_s"]}
        print(f"\nLoCoMo {split} split ({n} questions, categories 1-4, embedder {args.embedder})")
        print(f"| method | recall@10 | ctx@500 | ctx@1000 | ctx@2000 |")
        print("|---|---|---|---|---|")
        for name, base in BASELINES[split].items():
            print(f"| {name} (NOTICE) | " + " | ".join(f"{v:.3f}" for v in base) + " |")
        print("| **ctx build_context** | " + " | ".join(f"{v:.3f}" for v in row) + " |")
        hyb = BASELINES[split]["hybrid RRF"]
        print("| ratio vs hybrid | " + " | ".join(f"{v / h:.2f}x" for v, h in zip(row, hyb)) + " |")
        print(f"build_context latency over {len(agg['lat'])} calls: "
              f"p50 {pct(agg['lat'], 50):.1f} ms, p95 {pct(agg['lat'], 95):.1f} ms; "
              f"ingest {agg['ingest_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
