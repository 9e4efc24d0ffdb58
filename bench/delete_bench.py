"""Deleting a large folder through a real server while status and search are asked.

    python -m bench.delete_bench [--chunks 65000] [--files 116] [--stores DIR]
                                 [--idle-s 10] [--json FILE]

Issue 32: `ctx delete` of a folder of 116 sources (64,835 chunks) timed out after
10 s while the engine went on deleting for about 5 minutes in one write
transaction, and `ctx status` / `ctx audit` timed out meanwhile. The delete is now a
job done in steps (engine.flows.keeping.deleting); the claim is that status and search
answer within 1 s throughout.

A store of about ``--chunks`` chunks in one folder of ``--files`` generated markdown
files (the fake embedder: vectors of the right size, made fast) is grown under
``--stores`` the first time and reused after (each run deletes a copy of it). A
real `ctx serve` process serves the copy; the baseline is measured first in the same
run: status and search asked one after the other for ``--idle-s`` seconds with
nothing else running. Then `ctx delete FOLDER` runs as its own process (the CLI,
following the job) while the same loop asks status and search until it returns.
Printed: the machine's load (``uptime``) and a CPU probe before and after, the
delete's wall time and exit code, and per call and phase n, p50, p95 and max in
milliseconds, the ratio of p95 to the idle one, and how many calls took over 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.backup_bench import uptime
from bench.stats import machine_state, pct, table

REPO = Path(__file__).resolve().parents[1]
PASSPHRASE = "bench-passphrase"
QUERIES = ("harbour tides at dawn", "rope splicing knots", "lighthouse keeper log",
           "ferry timetable winter", "anchor chain length")
_WORDS = ["harbour", "tide", "rope", "anchor", "ferry", "lighthouse", "keeper", "dawn",
          "winter", "chain", "knot", "sail", "gull", "cliff", "pier", "net", "keel", "mast",
          "hull", "buoy", "current", "storm", "calm", "bay", "reef", "chart", "compass",
          "lantern", "deck", "cargo", "crane", "dock", "quay", "berth", "wharf", "shoal"]


def _env(runtime: Path) -> dict[str, str]:
    env = dict(os.environ, CTX_RUNTIME_DIR=str(runtime), CTX_EMBEDDER="fake",
               CTX_PASSPHRASE=PASSPHRASE, CTX__KEYS__SCRYPT_N="1024", PYTHONPATH=str(REPO))
    env.pop("CTX_HOME", None)
    return env


def write_folder(folder: Path, chunks: int, files: int, seed: int = 7) -> None:
    """``files`` markdown files holding about ``chunks`` chunks in all (200-token chunks:
    one paragraph of about 150 words each)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    per_file = max(1, chunks // files)
    for i in range(files):
        paras = [f"## Part {p}\n\n" + " ".join(rng.choice(_WORDS) for _ in range(150)) + "."
                 for p in range(per_file)]
        (folder / f"log{i:03d}.md").write_text(f"# Log {i}\n\n" + "\n\n".join(paras) + "\n")


def grow(stores: Path, chunks: int, files: int) -> tuple[Path, Path]:
    """The store (grown once under ``stores``) and the folder whose files it holds."""
    from engine import ContextEngine, init_store

    base = stores / f"delete-{chunks}-{files}"
    store, folder = base / "store", base / "notes"
    if (store / "key.json").exists() and folder.is_dir():
        return store, folder
    shutil.rmtree(base, ignore_errors=True)
    write_folder(folder, chunks, files)
    os.environ.update(CTX_EMBEDDER="fake", CTX__KEYS__SCRYPT_N="1024")
    init_store(store, passphrase=PASSPHRASE, use_keychain=False)
    t = time.perf_counter()
    with ContextEngine.open(store, passphrase=PASSPHRASE, create=False) as eng:
        job = eng.wait(eng.ingest(paths=[str(folder)]))
        print(f"grew {store}: {eng.status().chunks} chunks, {job.files_done} files in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
    return store, folder


def _serve(store: Path, runtime: Path, log: Path) -> subprocess.Popen[bytes]:
    from ipc.discovery import find_live

    os.environ["CTX_RUNTIME_DIR"] = str(runtime)
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "ipc.serve", "--data-dir", str(store)],
                                cwd=REPO, env=_env(runtime), stdout=subprocess.DEVNULL,
                                stderr=fh)
    deadline = time.monotonic() + 300
    while find_live(store) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: see {log}")
        time.sleep(0.1)
    return proc


def ask(store: Path, until: Any, samples: dict[str, list[float]]) -> None:
    """Ask status and search, one after the other, until ``until()``; milliseconds each
    (a call that fails counts as its time to fail, and is counted in ``failed``)."""
    from ipc.remote import connect

    remote = connect(store)
    assert remote is not None
    i = 0
    try:
        while not until():
            query = QUERIES[i % len(QUERIES)]
            for name, call in (("status", remote.status),
                               ("search", lambda q=query: remote.search(q, 10))):
                t = time.perf_counter()
                try:
                    call()
                except Exception:  # noqa: BLE001 - counted, the bench goes on
                    samples.setdefault("failed", []).append(0.0)
                samples.setdefault(name, []).append((time.perf_counter() - t) * 1000)
            i += 1
    finally:
        remote.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    stores = Path(args.stores)
    store, folder = grow(stores, args.chunks, args.files)
    work = Path(tempfile.mkdtemp(prefix="ctx-delete-bench-"))
    out: dict[str, Any] = {"chunks": args.chunks, "files": args.files}
    try:
        copy = work / "store"
        shutil.copytree(store, copy)
        runtime = work / "run"
        runtime.mkdir(mode=0o700)
        print(f"before: {uptime()}; {machine_state()}", flush=True)
        server = _serve(copy, runtime, work / "serve.log")
        try:
            from ipc.remote import connect

            remote = connect(copy)
            assert remote is not None
            status = remote.status()
            out["sources"], out["store_chunks"] = status.sources, status.chunks
            out["store_bytes_before"] = status.store_bytes
            remote.close()
            idle: dict[str, list[float]] = {}
            end = time.monotonic() + args.idle_s
            ask(copy, lambda: time.monotonic() > end, idle)
            t = time.perf_counter()
            cli = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "--data-dir",
                                    str(copy), "delete", str(folder)], cwd=REPO,
                                   env=_env(runtime), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            busy: dict[str, list[float]] = {}
            ask(copy, lambda: cli.poll() is not None, busy)
            stdout, stderr = cli.communicate()
            out["delete_s"] = time.perf_counter() - t
            out["delete_rc"] = cli.returncode
            out["delete_said"] = stdout.strip() or stderr.strip()[-200:]
            remote = connect(copy)
            assert remote is not None
            after = remote.status()
            out["sources_after"], out["store_bytes_after"] = after.sources, after.store_bytes
            remote.shutdown()
            remote.close()
        finally:
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
        print(f"after: {uptime()}; {machine_state()}", flush=True)
        rows = []
        for call in ("status", "search"):
            base = pct(idle.get(call, [0.0]), 95) or 1e-9
            for phase, samples in (("idle", idle), ("during delete", busy)):
                ms = samples.get(call, [])
                if not ms:
                    continue
                rows.append([call, phase, len(ms), pct(ms, 50), pct(ms, 95), max(ms),
                             pct(ms, 95) / base, sum(1 for m in ms if m > 1000)])
                out[f"{call} {phase}"] = {"n": len(ms), "p50": pct(ms, 50),
                                          "p95": pct(ms, 95), "max": max(ms)}
        out["failed"] = {"idle": len(idle.get("failed", [])),
                         "during": len(busy.get("failed", []))}
        print(f"\nctx delete of {out['sources']} sources ({out['store_chunks']} chunks): "
              f"{out['delete_s']:.1f} s, exit {out['delete_rc']}: {out['delete_said']!r}")
        print(f"store: {out['store_bytes_before'] / 1e6:.1f} MB before, "
              f"{out['store_bytes_after'] / 1e6:.1f} MB after "
              f"({out['sources_after']} sources left)")
        print(f"failed calls: {out['failed']}\n")
        print(table(["call", "phase", "n", "p50 ms", "p95 ms", "max ms", "p95 / idle",
                     "> 1 s"], rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=65000)
    ap.add_argument("--files", type=int, default=116)
    ap.add_argument("--stores", default=str(Path(tempfile.gettempdir()) / "ctx-bench-stores"))
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0 if out.get("delete_rc") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
