"""Backup and restore of a store: time and size at 10k and 100k chunks.

    python -m bench.backup_bench [--sizes 10000 100000] [--stores DIR] [--repeat 3]
                                 [--json FILE]

For each size, a store of that many chunks (the fake embedder: vectors of the right
size, made fast) is grown under ``--stores`` the first time (8.5 minutes for
100k on the shared 2-core machine at load 8) and reused after. Two ways to carry the vectors
are measured, alternating run by run so that the machine's load falls on both:

- ``vectors``: the in-memory index goes into the backup (sealed with the rest); a
  restore writes it back as vectors.snap, and the first open loads it as it is;
- ``vault only``: the backup holds the vault alone; the first open after a restore
  rebuilds the index from the vault's embedding cache.

Printed per size and arm: the backup's wall time (the engine open, the vault copied
with SQLite's online backup API, everything sealed and written) and size, checking
it (``verify``), the restore's wall time, the first open after it (until the vector
index is whole) and the two together, as median (p50) and p95 of the runs. The
baseline, run in the same process between the arms: a plain copy of the closed data
dir (``shutil.copytree``, what a user would do by hand, and unsafe while the engine
runs); each backup and restore + open time is also given as a ratio to it. The
machine's load (``uptime``) and a CPU probe are printed before and after (a shared
machine: compare ratios within one run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.models import embedding_config
from bench.stats import machine_state, summary, table

ARMS = {"vectors": True, "vault only": False}


def grow(root: Path, chunks: int, model: Any) -> Path:
    """The store of ``chunks`` chunks at ``root`` (grown from the bench corpus if absent)."""
    from bench.store_bench import ingest, pick_files
    from engine import ContextEngine

    if (root / "key.json").exists():
        return root
    files, _ = pick_files(chunks)
    with ContextEngine.open(root, embedder=model) as eng:
        seconds, _ = ingest(eng, files)
        print(f"grew {root}: {eng.status().chunks} chunks in {seconds:.0f} s", flush=True)
    return root


def copy_run(store: Path, work: Path) -> dict[str, float]:
    """The baseline: copy the closed store's folder as it is, and its size."""
    t = time.perf_counter()
    shutil.copytree(store, work / "copy")
    seconds = time.perf_counter() - t
    size = sum(f.stat().st_size for f in (work / "copy").rglob("*") if f.is_file())
    shutil.rmtree(work / "copy")
    return {"copy s": seconds, "copy MB": size / 1e6}


def uptime() -> str:
    """``uptime``'s line (the load averages), or the load averages where it is missing."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True,
                              timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def one_run(store: Path, work: Path, vectors: bool, model: Any) -> dict[str, float]:
    """Back ``store`` up, check it, restore it and open the restored store once."""
    from engine import ContextEngine, restore_backup

    out: dict[str, float] = {}
    dest = work / "store.ctxbackup"
    t = time.perf_counter()
    with ContextEngine.open(store, create=False, embedder=model) as eng:
        result = eng.backup(str(dest), include_vectors=vectors)
        out["backup s"] = time.perf_counter() - t
        t = time.perf_counter()
        eng.verify_backup(str(dest))
        out["verify s"] = time.perf_counter() - t
        out["chunks"] = eng.status().chunks
    out["backup MB"] = result.bytes / 1e6
    target = work / "restored"
    t = time.perf_counter()
    restore_backup(dest, target)
    out["restore s"] = time.perf_counter() - t
    t = time.perf_counter()
    with ContextEngine.open(target, create=False, embedder=model) as eng:
        out["first open s"] = time.perf_counter() - t
        status = eng.status()
        assert status.vectors == status.chunks, "the restored index is not whole"
    out["restore + open s"] = out["restore s"] + out["first open s"]
    shutil.rmtree(target)
    dest.unlink()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--stores", default=os.path.join(tempfile.gettempdir(), "ctx-backup-bench"),
                    help="where the benchmark stores are grown and kept")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    from engine.lab import make_embedder

    model = make_embedder(embedding_config(model="fake"))
    stores = Path(args.stores)
    stores.mkdir(parents=True, exist_ok=True)
    before = f"{uptime()}; {machine_state()}"
    results: dict[str, dict[str, list[float]]] = {}
    for size in args.sizes:
        store = grow(stores / f"store-{size}", size, model)
        for n in range(args.repeat):
            order = list(ARMS) if n % 2 == 0 else list(reversed(ARMS))
            for arm in (order[0], "copy", order[1]):
                with tempfile.TemporaryDirectory(dir=stores) as work:
                    run = (copy_run(store, Path(work)) if arm == "copy"
                           else one_run(store, Path(work), ARMS[arm], model))
                for key, value in run.items():
                    results.setdefault(f"{size}|{arm}", {}).setdefault(key, []).append(value)
                print(f"{size} {arm} run {n + 1}: " + ", ".join(
                    f"{k} {v:.2f}" for k, v in run.items()), flush=True)
    after = f"{uptime()}; {machine_state()}"
    print_results(results, before, after)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "load_before": before,
                                               "load_after": after}, indent=2))
    return 0


def print_results(results: dict[str, dict[str, list[float]]], before: str, after: str) -> None:
    cols = ["backup s", "backup MB", "verify s", "restore s", "first open s",
            "restore + open s"]
    rows = []
    for name, runs in results.items():
        size, arm = name.split("|")
        if arm == "copy":
            continue
        copy = summary(results[f"{size}|copy"]["copy s"])["p50"]
        row: list[Any] = [size, int(runs["chunks"][0]), arm]
        for col in cols:
            s = summary(runs[col])
            row.append(f"{s['p50']:.2f}" if col == "backup MB"
                       else f"{s['p50']:.2f} / {s['p95']:.2f}")
        row.append(f"{summary(runs['backup s'])['p50'] / copy:.1f}")
        row.append(f"{summary(runs['restore + open s'])['p50'] / copy:.1f}")
        rows.append(row)
    print("\nbackup and restore (p50 / p95 of the runs; seconds, MB; x copy: ratio of the "
          "p50 to the p50 of a plain copy of the closed data dir, same process)")
    print(table(["size", "chunks", "vectors carried", *cols, "backup x copy",
                 "restore + open x copy"], rows))
    copies = []
    for size in sorted({n.split("|")[0] for n in results}, key=int):
        runs = results[f"{size}|copy"]
        s = summary(runs["copy s"])
        copies.append([size, f"{s['p50']:.2f} / {s['p95']:.2f}",
                       f"{summary(runs['copy MB'])['p50']:.2f}"])
    print("\nbaseline: plain copy of the closed data dir")
    print(table(["size", "copy s", "data dir MB"], copies))
    for size in sorted({n.split("|")[0] for n in results}, key=int):
        a = summary(results[f"{size}|vault only"]["restore + open s"])["p50"]
        b = summary(results[f"{size}|vectors"]["restore + open s"])["p50"]
        print(f"{size}: restore + open, vault only / vectors = {a / b:.2f}")
    print(f"before: {before}\nafter:  {after}\n({os.cpu_count()} cores)")

if __name__ == "__main__":
    raise SystemExit(main())
