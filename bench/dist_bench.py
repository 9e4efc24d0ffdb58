"""The app bundle against the pip install: start-up, query embedding and build_context.

    python -m bench.dist_bench [--bundle dist/ctx] [--variants bundle,pip-onnx,pip-torch]
                               [--queries 40] [--embeds 60] [--starts 3] [--launches 3]

Needs a built bundle (make dist). Variants, measured in the same run:
``bundle`` (the bundled ``ctx``, ONNX), ``pip-onnx`` (this checkout under this
interpreter, the very ONNX export the bundle carries: same embedder, so the
packaging is all that differs) and ``pip-torch`` (the pip install's default
where torch is installed). Each runs with a clean HOME and a headless key,
outside any virtualenv for the bundle. Ratios are against the pip variants.

1. Query embedding: ``--bench-embed`` of the launcher (the same code in both):
   load time, single-query p50/p95 on one thread; two rounds, in both orders.
2. Engine ready: from starting ``ctx serve`` to the first build_context
   answered over ZeroMQ (model loaded, store open), ``--starts`` times each, on
   copies of one store.
3. build_context over ZeroMQ, distinct queries, the servers in turns.
   Start-up is also given as the process's CPU time (see ``cpu_s``).
4. Tray app (when the bundle has one): ``--launches`` launches under Xvfb +
   trayer: to the icon docked in the tray, and to the first build_context
   answered over IPC. The first launch after a build runs with cold file caches.

Progress goes to stderr; the tables to stdout (with the load average, since
the machine may be shared).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.stats import pct, table

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["how are messages signed", "what happens after a timeout", "how is the budget kept",
           "where does the connection file live", "which errors have codes",
           "how are transcripts indexed", "what does the tray show", "how are chunks deduped"]
VARIANTS = ("bundle", "pip-onnx", "pip-torch")
BASELINES = ("pip-onnx", "pip-torch")
ONNX_IN_BUNDLE = Path("_internal") / "ctx_models" / "all-MiniLM-L6-v2-onnx"


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far; nan where unknown.

    Reported beside wall times: on a machine shared with other work the wall time
    to ready mostly measures the queue for the cores, the CPU time what the start
    itself costs (about the wall time on an idle machine, for a mostly serial start).
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def say(msg: str) -> None:
    sys.stderr.write(f"[dist_bench {time.strftime('%H:%M:%S')} load "
                     f"{os.getloadavg()[0]:.1f}] {msg}\n")


def env_for(home: Path, runtime: Path, variant: str, bundle: Path | None = None
            ) -> dict[str, str]:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": str(runtime), "CTX_PASSPHRASE": "bench passphrase"}
    if variant != "bundle":
        env["PYTHONPATH"] = str(REPO)
        env["CTX__EMBEDDING__BACKEND"] = '"torch"' if variant == "pip-torch" else '"onnx"'
        if variant == "pip-onnx" and bundle is not None:  # the very export the bundle carries
            env["CTX__EMBEDDING__ONNX_DIR"] = json.dumps(str(bundle / ONNX_IN_BUNDLE))
    return env


def command(variant: str, bundle: Path, *args: str, launcher: bool = False) -> list[str]:
    if variant == "bundle":
        return [str(bundle / "ctx"), *args]
    if launcher:
        return [sys.executable, str(REPO / "packaging" / "launcher.py"), *args]
    return [sys.executable, "-m", "ipc.cli.main", *args]


def ratios(value: float, rows: dict[str, float], variants: list[str]) -> list[Any]:
    """``value`` over each pip variant's (blank where that variant was not run)."""
    return [value / rows[b] if rows.get(b) else "" for b in BASELINES
            if b in variants]


def embed_rows(bundle: Path, tmp: Path, n: int, variants: list[str]) -> list[list[Any]]:
    found: dict[str, dict[str, Any]] = {}
    for rnd, order in enumerate((variants, variants[::-1])):  # two rounds, in both orders
        for variant in order:
            say(f"query embedding, round {rnd + 1}/2: {variant}")
            home = tmp / f"embed-{variant}-{rnd}"
            home.mkdir()
            out = json.loads(subprocess.run(
                command(variant, bundle, "--bench-embed", str(n), launcher=True),
                env=env_for(home, tmp, variant, bundle), capture_output=True, text=True,
                check=True, cwd=home, timeout=900).stdout)
            seen = found.setdefault(variant, {"backend": out["backend"], "load_s": [],
                                              "ms": []})
            seen["load_s"].append(out["load_s"])
            seen["ms"] += out["ms"]
    p50 = {v: pct(r["ms"], 50) for v, r in found.items()}
    return [[v, r["backend"], pct(r["load_s"], 50), p50[v], pct(r["ms"], 95),
             *ratios(p50[v], p50, variants)] for v, r in found.items()]


def make_store(bundle: Path, tmp: Path) -> Path:
    say("seed store: bundle init + ingest README.md, docs/")
    home = tmp / "seed"
    home.mkdir()
    env = env_for(home, tmp, "bundle")
    subprocess.run(command("bundle", bundle, "--local", "init"), env=env, check=True,
                   capture_output=True, timeout=600)
    docs = [str(REPO / "README.md"), str(REPO / "docs")]
    subprocess.run(command("bundle", bundle, "--local", "ingest", *docs), env=env, check=True,
                   capture_output=True, timeout=900)
    return home / ".local" / "share" / "ctx"


def first_answer(data_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 300) -> Any:
    """Connect to the server of ``data_dir`` and get one build_context answered."""
    from engine import CtxError
    from ipc.remote import connect

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        remote = connect(data_dir, timeout=60.0)
        if remote is not None:
            try:
                remote.build_context("first question after start", budget=500)
                return remote
            except CtxError:  # up, but its engine still opening: ask again
                remote.close()
        time.sleep(0.02)
    raise RuntimeError("server did not come up")


def stop_server(proc: subprocess.Popen[bytes], remote: Any) -> None:
    with contextlib.suppress(Exception):  # best effort; terminated below
        remote.shutdown()
    remote.close()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait(timeout=30)


def start_server(variant: str, bundle: Path, tmp: Path, seed: Path, tag: str
                 ) -> tuple[subprocess.Popen[bytes], Any, float, float]:
    home = tmp / f"serve-{variant}-{tag}"
    data = home / ".local" / "share" / "ctx"
    shutil.copytree(seed, data)
    runtime = tmp / f"run-{variant}-{tag}"
    runtime.mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # where our client looks
    t = time.perf_counter()
    proc = subprocess.Popen(command(variant, bundle, "serve"),
                            env=env_for(home, runtime, variant, bundle), cwd=home,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        remote = first_answer(data, proc)
    except BaseException:
        proc.terminate()
        proc.wait(timeout=30)
        raise
    return proc, remote, time.perf_counter() - t, cpu_s(proc.pid)


def serve_rows(bundle: Path, tmp: Path, seed: Path, queries: int, starts: int,
               variants: list[str]) -> list[list[Any]]:
    ready: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    servers: dict[str, tuple[subprocess.Popen[bytes], Any]] = {}
    try:
        for run in range(starts):  # variants in turns, so that load drifts hit all alike
            for variant in variants:
                say(f"ctx serve start {run + 1}/{starts}: {variant}")
                proc, remote, took, used = start_server(variant, bundle, tmp, seed, str(run))
                ready[variant].append(took)
                cpu[variant].append(used)
                if run == starts - 1:
                    servers[variant] = (proc, remote)
                else:
                    stop_server(proc, remote)
        say(f"{queries} build_context calls per server")
        lat: dict[str, list[float]] = {v: [] for v in servers}
        for i in range(queries):
            q = f"{QUERIES[i % len(QUERIES)]} ({i})"
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for variant in order:
                t = time.perf_counter()
                servers[variant][1].build_context(q, budget=800)
                lat[variant].append((time.perf_counter() - t) * 1000)
    finally:
        for proc, remote in servers.values():
            stop_server(proc, remote)
    r50 = {v: pct(ready[v], 50) for v in variants}
    c50 = {v: pct(cpu[v], 50) for v in variants}
    b50 = {v: pct(lat[v], 50) for v in variants}
    return [[v, r50[v], pct(ready[v], 95), *ratios(r50[v], r50, variants), c50[v],
             *ratios(c50[v], c50, variants), b50[v], pct(lat[v], 95),
             *ratios(b50[v], b50, variants)] for v in variants]


class TrayWatch(threading.Thread):
    """Polls the X tree for the docked icon, apart from the IPC calls (which block)."""

    def __init__(self, x: Any, t0: float, pid: int) -> None:
        super().__init__(daemon=True)
        self.x, self.t0, self.pid = x, t0, pid
        self.at: float | None = None
        self.cpu = float("nan")
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and self.at is None:
            if self.x.tray_has_icon():
                self.at = time.perf_counter() - self.t0
                self.cpu = cpu_s(self.pid)
            else:
                time.sleep(0.01)


def app_rows(bundle: Path, tmp: Path, seed: Path, launches: int) -> list[list[Any]]:
    if not (bundle / "_internal" / "PySide6").exists():
        return []
    from tests.dist.xsession import XSession

    rows: list[list[Any]] = []
    for run in range(launches):
        say(f"tray app launch {run + 1}/{launches}")
        home = tmp / f"app-{run}"
        data = home / ".local" / "share" / "ctx"
        shutil.copytree(seed, data)
        runtime = tmp / f"app-run-{run}"
        runtime.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        with XSession() as x:
            env = dict(env_for(home, runtime, "bundle"), DISPLAY=x.display)
            t = time.perf_counter()
            proc = subprocess.Popen([str(bundle / "ctx-app")], env=env, cwd=home,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            watch = TrayWatch(x, t, proc.pid)
            watch.start()
            try:
                remote = first_answer(data, proc)
                ready = time.perf_counter() - t
                ready_cpu = cpu_s(proc.pid)
                remote.close()
                watch.join(timeout=120)
                if watch.at is None:
                    raise RuntimeError("no tray icon docked")
                rows.append([f"launch {run + 1}", watch.at, watch.cpu, ready, ready_cpu])
                subprocess.run([str(bundle / "ctx-app"), "--quit"], env=env, timeout=60,
                               capture_output=True, check=False)
                proc.wait(timeout=60)
            finally:
                watch.done.set()
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(timeout=30)
    cols = [[r[i] for r in rows] for i in range(1, 5)]
    rows.append(["median", *(pct(c, 50) for c in cols)])
    rows.append(["p95", *(pct(c, 95) for c in cols)])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, default=REPO / "dist" / "ctx")
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"comma-separated, from {', '.join(VARIANTS)}")
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--embeds", type=int, default=60)
    p.add_argument("--starts", type=int, default=3, help="ctx serve starts per variant")
    p.add_argument("--launches", type=int, default=3, help="tray app launches")
    args = p.parse_args(argv)
    args.bundle = args.bundle.resolve()
    variants = [v for v in args.variants.split(",") if v]
    if not (args.bundle / "ctx").is_file():
        sys.stderr.write(f"no bundle at {args.bundle}: run make dist\n")
        return 2
    if variants[:1] != ["bundle"] or not set(variants) <= set(VARIANTS):
        sys.stderr.write(f"--variants: 'bundle' first, then any of {VARIANTS[1:]}\n")
        return 2
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ctx-distbench-") as td:
        tmp = Path(td)
        embed = embed_rows(args.bundle, tmp, args.embeds, variants)
        seed = make_store(args.bundle, tmp)
        serve = serve_rows(args.bundle, tmp, seed, args.queries, args.starts, variants)
        app = app_rows(args.bundle, tmp, seed, args.launches)
    base = [f"x {b}" for b in BASELINES if b in variants]
    print(f"cpus={os.cpu_count()}, load average at start {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}, at end {os.getloadavg()[0]:.1f}\n")
    print(f"Query embedding, {args.embeds} single queries (launcher --bench-embed); "
          "x = p50 ratio")
    print(table(["variant", "backend", "load s", "p50 ms", "p95 ms", *base], embed))
    print(f"\nctx serve: start to first build_context over ZeroMQ ({args.starts} starts "
          f"each); then {args.queries} distinct build_context calls, servers in turns; "
          "x = p50 ratio")
    print(table(["variant", "ready p50 s", "ready p95 s", *[f"ready {b}" for b in base],
                 "ready CPU s", *[f"CPU {b}" for b in base], "build p50 ms", "build p95 ms",
                 *[f"build {b}" for b in base]], serve))
    if app:
        print("\nTray app (bundle) under Xvfb + trayer: launch to icon docked, to engine "
              "ready (first build_context over IPC answered), wall and the app's CPU "
              "time. Targets: 1.5 s, 4 s")
        print(table(["run", "tray icon s", "tray CPU s", "engine ready s", "ready CPU s"],
                    app))
    return 0


if __name__ == "__main__":
    sys.exit(main())
