"""What skipping blobs saves: one folder of real packages ingested with the detector on
and off, in the same process (``engine.ingest.blobs``, ``ingest.skip_blobs``).

    python -m bench.blob_savings [--packages certifi,idna,click] [--rounds 3] [--json FILE]

Copies the named packages of this interpreter's site-packages (default: certifi,
whose PEM bundle is the issue's example, with two small libraries beside it)
into a temporary folder, loads the real model once, then, alternating ``on``
and ``off`` for ``--rounds`` rounds, opens a fresh store (no embedding cache
carried over), ingests the folder and waits until every vector is in (after
one round of each, not counted: a process's first ingest ran 2x slower). Printed
per setting: the seconds to the job's end (median, p95), chunks, files skipped
as blobs, and the ratio of ``on`` to ``off`` (the baseline) in this process;
and the machine load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ingest_stages import copy_tree
from bench.stats import machine_state, pct, table

PACKAGES = ("certifi", "idna", "click")


def one_round(folder: Path, work: Path, model: Any, skip: bool) -> dict[str, Any]:
    """Ingest ``folder`` into a fresh store with the detector ``skip`` on or off."""
    from engine import ContextEngine

    os.environ["CTX__INGEST__SKIP_BLOBS"] = "true" if skip else "false"
    store = work / f"store-{'on' if skip else 'off'}"
    shutil.rmtree(store, ignore_errors=True)
    with ContextEngine.open(store, embedder=model) as eng:
        t0 = time.perf_counter()
        snap = eng.wait(eng.ingest(paths=[str(folder)]))
        seconds = time.perf_counter() - t0
        assert snap.state == "done", snap.state
        blobs = sum(1 for f in snap.skipped if f.reason == "blob")
        return {"seconds": seconds, "chunks": snap.chunks, "blobs": blobs,
                "vectors": eng.status().vectors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default=",".join(PACKAGES))
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
    os.environ["CTX_EMBEDDER"] = "minilm"
    from engine.lab import EmbeddingConfig, make_embedder

    model = make_embedder(EmbeddingConfig(model="minilm"))
    model.encode(["warm up"])
    work = Path(tempfile.mkdtemp(prefix="ctx-blobs-"))
    runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    try:
        files = copy_tree(work / "tree", args.packages.split(","), args.files)
        for skip in (True, False):  # warm-up, not counted
            one_round(work / "tree", work, model, skip)
        before = machine_state()
        for r in range(args.rounds):  # alternate, and swap the order every round
            order = (True, False) if r % 2 == 0 else (False, True)
            for skip in order:
                runs["on" if skip else "off"].append(one_round(work / "tree", work, model, skip))
        after = machine_state()
    finally:
        os.environ.pop("CTX__INGEST__SKIP_BLOBS", None)
        shutil.rmtree(work, ignore_errors=True)
    base = pct([x["seconds"] for x in runs["off"]], 50)
    rows = []
    for name in ("off", "on"):
        secs = [x["seconds"] for x in runs[name]]
        rows.append([f"skip_blobs {name}", len(secs), pct(secs, 50), pct(secs, 95),
                     runs[name][-1]["chunks"], runs[name][-1]["blobs"],
                     f"{pct(secs, 50) / base:.2f}"])
    print(f"{len(files)} files of {args.packages}")
    print(table(["setting", "rounds", "median s", "p95 s", "chunks", "blob files skipped",
                 "ratio to off"], rows))
    print(f"machine before: {before}; after: {after}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "before": before,
                                               "after": after}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
