"""Which text files the blob detector skips, and what that saves (``engine.ingest.blobs``).

    python -m bench.blob_scan [FOLDER ...] [--sample 40] [--seed 7] [--json FILE]

Walks FOLDER (default: this interpreter's site-packages) as ingestion would
(``walk_paths``, ``load_file`` with the detector off), then asks
``blob_kind`` of every text file. Printed: files, bytes and cl100k tokens per
kind (the embedding work a skip saves: tokens are what the model reads), the
files nearest each threshold on either side, and a random sample of skipped
files per kind to read by eye (a false skip is prose or hand-written code).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import random
import sysconfig
import time
from pathlib import Path
from typing import Any

from bench.stats import machine_state, table


def scan(folders: list[str]) -> list[dict[str, Any]]:
    from engine import FileRejected, TokenCounter
    from engine.lab import IngestConfig, blob_kind, load_file, walk_paths
    from engine.lab import measure_blob as measure

    cfg = IngestConfig()
    tc = TokenCounter.shared()
    out = []
    for path in walk_paths(folders, respect_gitignore=False):
        if isinstance(path, FileRejected):
            continue
        try:
            doc = load_file(path)
        except FileRejected:
            continue
        t0 = time.perf_counter()
        kind = blob_kind(path.name, doc.text, cfg, tc.count)
        took = time.perf_counter() - t0
        m = measure(doc.text, cfg, tc.count)
        out.append({"path": str(path), "bytes": len(doc.text.encode()), "kind": kind,
                    "ms": took * 1000, "tokens": tc.count(doc.text) if kind else 0,
                    **dataclasses.asdict(m)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*")
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    folders = args.folders or [sysconfig.get_paths()["purelib"]]
    print(f"machine before: {machine_state()}")
    t0 = time.perf_counter()
    rows = scan(folders)
    print(f"{len(rows)} text files in {time.perf_counter() - t0:.0f} s; machine after: "
          f"{machine_state()}")
    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in rows:
        by[r["kind"] or "kept"].append(r)
    print(table(["kind", "files", "MB", "tokens (M)", "detector ms/file"], [
        [k, len(v), sum(r["bytes"] for r in v) / 1e6, sum(r["tokens"] for r in v) / 1e6,
         sum(r["ms"] for r in v) / len(v)] for k, v in sorted(by.items())]))
    kept = by.get("kept", [])
    for measure_name in ("base64_share", "tokens_per_char", "long_line_share"):
        near = sorted(kept, key=lambda r: -r[measure_name])[:8]
        print(f"\nkept files highest in {measure_name}:")
        for r in near:
            print(f"  {r[measure_name]:.3f}  ws {r['whitespace_share']:.2f}  {r['path']}")
    rng = random.Random(args.seed)
    for kind, v in sorted(by.items()):
        if kind == "kept":
            continue
        print(f"\nsample of {kind} ({len(v)}):")
        for r in rng.sample(v, min(args.sample, len(v))):
            print(f"  {r['path']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
