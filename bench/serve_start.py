"""`ctx serve` from launch to its first answer: when clients can connect, when the
model is warm, and when the first build_context comes back.

    python -m bench.serve_start STORE [STORE ...] [--runs 3] [--query TEXT]
                                [--after-warm] [--json FILE]

Each STORE (a ctx data dir; it runs on a temporary copy) is served by a fresh
``ctx serve`` process, ``--runs`` times, alternating stores. The client polls
for the connection file every 20 ms; as soon as it connects it sends one
build_context (budget 1500), or, with ``--after-warm``, first waits until
``status`` says the model is loaded (what a GUI showing "ready" only then
would do). Printed per store: launch to connect, to model loaded (as first
seen by the client), to the first answer, how long that first call took and a
second one, median over the runs, with the machine load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import machine_state, table

REPO = Path(__file__).resolve().parents[1]


def one_run(store: Path, query: str, after_warm: bool) -> dict[str, float]:
    from ipc.remote import connect

    work = Path(tempfile.mkdtemp(prefix="ctx-serve-start-"))
    copy = work / "store"
    shutil.copytree(store, copy)
    env = {**os.environ, "CTX_HOME": str(copy), "XDG_RUNTIME_DIR": str(work)}
    os.chmod(work, 0o700)
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "serve"], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    old_env = {k: os.environ.get(k) for k in ("CTX_HOME", "XDG_RUNTIME_DIR")}
    os.environ.update({"CTX_HOME": str(copy), "XDG_RUNTIME_DIR": str(work)})
    remote = None
    try:
        while remote is None:
            if proc.poll() is not None:
                raise RuntimeError(f"ctx serve ended: {proc.stderr.read()[-400:]}")  # type: ignore[union-attr]
            remote = connect(copy)
            if remote is None:
                time.sleep(0.02)
        out["connect_s"] = time.perf_counter() - t0
        while after_warm and not remote.status().model_loaded:
            time.sleep(0.02)
        if after_warm:
            out["model_loaded_s"] = time.perf_counter() - t0
        t = time.perf_counter()
        remote.build_context(query, budget=1500)
        out["first_answer_s"] = time.perf_counter() - t0
        out["first_call_ms"] = (time.perf_counter() - t) * 1000
        if not after_warm:
            out["model_loaded_s"] = (time.perf_counter() - t0 if remote.status().model_loaded
                                     else float("nan"))
        t = time.perf_counter()
        remote.build_context(query + " again", budget=1500)
        out["second_call_ms"] = (time.perf_counter() - t) * 1000
        remote.shutdown()
    finally:
        if remote is not None:
            remote.close()
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--query", default="how are redirects followed across hosts")
    ap.add_argument("--after-warm", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    before = machine_state()
    results: dict[str, list[dict[str, float]]] = {str(s): [] for s in args.stores}
    for _ in range(args.runs):
        for store in args.stores:
            results[str(store)].append(one_run(store, args.query, args.after_warm))
    after = machine_state()
    rows: list[list[Any]] = []
    for store, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append([Path(store).name, f"{med['connect_s']:.2f}", f"{med['model_loaded_s']:.2f}",
                     f"{med['first_answer_s']:.2f}", f"{med['first_call_ms']:.0f}",
                     f"{med['second_call_ms']:.0f}"])
    print(table(["store", "connect s", "model loaded s", "first answer s", "first call ms",
                 "second call ms"], rows))
    print(f"medians of {args.runs} runs; machine before: {before}; after: {after}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
