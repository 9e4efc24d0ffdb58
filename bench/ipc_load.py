"""Load on the IPC server: many client processes, mixed calls, latency percentiles.

    python -m bench.ipc_load [--clients 32] [--calls 200] [--workers 4] [--engine real|fake]

Starts one ``python -m ipc.serve`` on a temporary data dir (fake embedder,
passphrase key), seeds it with small documents, then runs ``--clients``
processes that each make ``--calls`` interleaved calls (build_context, search,
status, small ingests) with no retries, so that a lost reply shows up as a
timeout instead of being hidden by a retry. Every build_context asks for a
budget unique to that call and checks it is echoed, so a reply routed to the
wrong caller would be caught even if its signature and parent id were fine.
Prints a table of p50/p95/p99 per method and totals; exits 1 on any error,
lost or crossed reply. ``--engine fake`` serves the in-test fake engine
(wire cost only).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIX = (("build_context", 0.4), ("search", 0.3), ("status", 0.2), ("ingest", 0.1))
WORDS = ("river", "lantern", "copper", "orchard", "glacier", "harbor", "meadow", "signal",
         "quarry", "violet", "ember", "falcon", "timber", "canyon", "velvet", "pepper")


def _sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def client_main(index: int, calls: int, data_dir: str, start: Any, out: Any) -> None:
    """One client process: wait for the start signal, make ``calls`` calls, report."""
    from ipc.remote import connect

    rng = random.Random(index)
    remote = connect(Path(data_dir), timeout=60.0, retries=0)
    if remote is None:
        out.put({"index": index, "fatal": "no live server"})
        return
    samples: list[tuple[str, float]] = []
    errors: dict[str, int] = {}
    crossed = 0
    start.wait()
    for i in range(calls):
        method = rng.choices([m for m, _ in MIX], [w for _, w in MIX])[0]
        began = time.perf_counter()
        try:
            if method == "build_context":
                budget = 200 + index * calls + i  # unique per call
                if remote.build_context(_sentence(rng, 6), budget=budget).budget != budget:
                    crossed += 1
            elif method == "search":
                remote.search(_sentence(rng, 4), 5)
            elif method == "status":
                remote.status()
            else:
                remote.ingest(text=_sentence(rng, 40), title=f"load-{index}-{i}")
        except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
            name = getattr(exc, "name", type(exc).__name__)
            errors[name] = errors.get(name, 0) + 1
            continue
        samples.append((method, (time.perf_counter() - began) * 1000.0))
    remote.close()
    out.put({"index": index, "samples": samples, "errors": errors, "crossed": crossed})


def _pct(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 10) - 1]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _start_server(data_dir: Path, runtime: Path, engine: str, workers: int,
                  log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, CTX_RUNTIME_DIR=str(runtime), CTX_EMBEDDER="fake",
               CTX_PASSPHRASE="bench-passphrase", PYTHONPATH=str(REPO))
    env.pop("CTX_HOME", None)
    args = ["--data-dir", str(data_dir), "--workers", str(workers)]
    if engine == "fake":
        code = ("import sys; from ipc.serve import main; from tests.ipc.fake_engine import "
                "FakeEngine; sys.exit(main(sys.argv[1:], engine_factory=FakeEngine.open))")
        cmd = [sys.executable, "-c", code, *args]
    else:
        cmd = [sys.executable, "-m", "ipc.serve", *args]
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=fh)


def run(clients: int, calls: int, workers: int, engine: str) -> int:
    from ipc.connection import ENV_RUNTIME_DIR
    from ipc.discovery import find_live
    from ipc.remote import connect

    tmp = Path(tempfile.mkdtemp(prefix="ctx-ipc-load-"))
    runtime = tmp / "rt"
    data_dir = tmp / "data"
    os.environ[ENV_RUNTIME_DIR] = str(runtime)
    server = _start_server(data_dir, runtime, engine, workers, tmp / "server.log")
    try:
        deadline = time.monotonic() + 120
        while find_live(data_dir) is None:
            if server.poll() is not None or time.monotonic() > deadline:
                print((tmp / "server.log").read_text(errors="replace")[-3000:], file=sys.stderr)
                raise SystemExit("the server did not start")
            time.sleep(0.05)
        seed = connect(data_dir, timeout=120)
        assert seed is not None
        rng = random.Random(0)
        jobs = [seed.ingest(text=" ".join(_sentence(rng) for _ in range(8)), title=f"seed-{n}")
                for n in range(40)]
        for job in jobs:
            seed.wait(job)

        ctx = mp.get_context("spawn")
        start, out = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=client_main, args=(n, calls, str(data_dir), start, out))
                 for n in range(clients)]
        for p in procs:
            p.start()
        time.sleep(1.0 + clients * 0.05)  # let every process import and connect
        began = time.perf_counter()
        start.set()
        reports = [out.get(timeout=600) for _ in procs]
        wall = time.perf_counter() - began
        for p in procs:
            p.join(60)
        server_stats = seed.status().server or {}
        seed.shutdown()
        seed.close()
        server.wait(60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    fatal = [r for r in reports if "fatal" in r]
    by_method: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    crossed = 0
    for report in reports:
        for method, ms in report.get("samples", []):
            by_method.setdefault(method, []).append(ms)
        for name, n in report.get("errors", {}).items():
            errors[name] = errors.get(name, 0) + n
        crossed += report.get("crossed", 0)
    rows = [["method", "calls", "p50 ms", "p95 ms", "p99 ms", "max ms"]]
    every: list[float] = []
    for method, _ in MIX:
        values = sorted(by_method.get(method, []))
        every.extend(values)
        if values:
            rows.append([method, str(len(values)), f"{_pct(values, 50):.2f}",
                         f"{_pct(values, 95):.2f}", f"{_pct(values, 99):.2f}",
                         f"{values[-1]:.2f}"])
    every.sort()
    rows.append(["all", str(len(every)), f"{_pct(every, 50):.2f}", f"{_pct(every, 95):.2f}",
                 f"{_pct(every, 99):.2f}", f"{every[-1]:.2f}"])
    expected = clients * calls
    lost = errors.get("ipc_timeout", 0)
    print(f"ipc load: {clients} client processes x {calls} calls, {workers} workers, "
          f"engine={engine}, {os.cpu_count()} CPUs")
    print(_table(rows))
    print(f"\ntotal {len(every)}/{expected} ok in {wall:.2f} s = {len(every) / wall:.0f} calls/s; "
          f"errors {sum(errors.values())}{f' {errors}' if errors else ''}; lost {lost}; "
          f"crossed {crossed}; "
          f"client crashes {len(fatal)}")
    print(f"server: received {server_stats.get('received')}, replied "
          f"{server_stats.get('replied')}, max in flight {server_stats.get('max_in_flight')}")
    return 0 if (len(every) == expected and not errors and not crossed and not fatal) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--engine", choices=("real", "fake"), default="real")
    args = parser.parse_args(argv)
    return run(args.clients, args.calls, args.workers, args.engine)


if __name__ == "__main__":
    sys.exit(main())
