"""The app bundle against the pip install: start-up, query embedding and build_context.

    python -m bench.dist_bench [--bundle dist/ctx] [--queries 60] [--embeds 100]

Needs a built bundle (make dist). Three variants, measured in the same run:
``bundle`` (the bundled ``ctx``, ONNX), ``pip-torch`` and ``pip-onnx`` (this
checkout under this interpreter, embedding.backend forced). Each runs with a
clean HOME and a headless key, outside any virtualenv for the bundle.

1. Query embedding: ``--bench-embed`` of the launcher (the same code in both):
   load time, single-query p50/p95 on one thread.
2. Engine ready: from starting ``ctx serve`` to the first build_context
   answered over ZeroMQ (model loaded, store open), on copies of one store.
3. build_context over ZeroMQ, distinct queries, the three servers in turns.
4. Tray app (when the bundle has one): from launch under Xvfb + trayer to the
   icon docked in the tray, and to the first build_context answered over IPC.
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
import time
from pathlib import Path
from typing import Any

from bench.stats import pct, table

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["how are messages signed", "what happens after a timeout", "how is the budget kept",
           "where does the connection file live", "which errors have codes",
           "how are transcripts indexed", "what does the tray show", "how are chunks deduped"]
VARIANTS = ("bundle", "pip-torch", "pip-onnx")


ONNX_IN_BUNDLE = Path("_internal") / "ctx_models" / "all-MiniLM-L6-v2-onnx"


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


def embed_rows(bundle: Path, tmp: Path, n: int) -> list[list[Any]]:
    rows = []
    for variant in VARIANTS:
        home = tmp / f"embed-{variant}"
        home.mkdir()
        out = subprocess.run(command(variant, bundle, "--bench-embed", str(n), launcher=True),
                             env=env_for(home, tmp, variant, bundle), capture_output=True, text=True,
                             check=True, cwd=home).stdout
        r = json.loads(out)
        rows.append([variant, r["backend"], r["load_s"], pct(r["ms"], 50), pct(r["ms"], 95)])
    return rows


def make_store(bundle: Path, tmp: Path) -> Path:
    home = tmp / "seed"
    home.mkdir()
    env = env_for(home, tmp, "bundle")
    subprocess.run(command("bundle", bundle, "init"), env=env, check=True, capture_output=True)
    docs = [str(REPO / "README.md"), str(REPO / "docs")]
    subprocess.run(command("bundle", bundle, "ingest", *docs), env=env, check=True,
                   capture_output=True)
    return home / ".local" / "share" / "ctx"


def wait_connect(data_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 300) -> Any:
    from ipc.remote import connect

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        remote = connect(data_dir, timeout=30.0)
        if remote is not None:
            return remote
        time.sleep(0.02)
    raise RuntimeError("server did not come up")


def serve_rows(bundle: Path, tmp: Path, seed: Path, queries: int) -> list[list[Any]]:
    servers: dict[str, tuple[subprocess.Popen[bytes], Any, float]] = {}
    try:
        for variant in VARIANTS:
            home = tmp / f"serve-{variant}"
            data = home / ".local" / "share" / "ctx"
            shutil.copytree(seed, data)
            runtime = tmp / f"run-{variant}"
            runtime.mkdir(mode=0o700)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # where our client looks
            t = time.perf_counter()
            proc = subprocess.Popen(command(variant, bundle, "serve"),
                                    env=env_for(home, runtime, variant, bundle), cwd=home,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            remote = wait_connect(data, proc)
            remote.build_context("first question after start", budget=500)
            servers[variant] = (proc, remote, time.perf_counter() - t)
        lat: dict[str, list[float]] = {v: [] for v in servers}
        for i in range(queries):
            q = f"{QUERIES[i % len(QUERIES)]} ({i})"
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for variant in order:
                t = time.perf_counter()
                servers[variant][1].build_context(q, budget=800)
                lat[variant].append((time.perf_counter() - t) * 1000)
        return [[v, servers[v][2], pct(lat[v], 50), pct(lat[v], 95)] for v in servers]
    finally:
        for proc, remote, _ in servers.values():
            with contextlib.suppress(Exception):  # best effort; terminated below
                remote.shutdown()
            remote.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(timeout=30)


def app_rows(bundle: Path, tmp: Path, seed: Path) -> list[list[Any]]:
    if not (bundle / "_internal" / "PySide6").exists():
        return []
    from tests.dist.xsession import XSession

    rows = []
    for run in range(2):  # the second launch has warm file caches
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
            try:
                tray = None
                remote = None
                while tray is None or remote is None:
                    if tray is None and x.tray_has_icon():
                        tray = time.perf_counter() - t
                    if remote is None:
                        from ipc.remote import connect

                        remote = connect(data, timeout=30.0)
                    if time.perf_counter() - t > 300:
                        raise RuntimeError("the app did not come up")
                    time.sleep(0.02)
                remote.build_context("first question after start", budget=500)
                ready = time.perf_counter() - t
                while tray is None and time.perf_counter() - t < 300:
                    tray = time.perf_counter() - t if x.tray_has_icon() else None
                rows.append([f"launch {run + 1}", tray, ready])
                subprocess.run([str(bundle / "ctx-app"), "--quit"], env=env, timeout=60,
                               capture_output=True, check=False)
                proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(timeout=30)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, default=REPO / "dist" / "ctx")
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--embeds", type=int, default=100)
    args = p.parse_args(argv)
    args.bundle = args.bundle.resolve()
    if not (args.bundle / "ctx").is_file():
        sys.stderr.write(f"no bundle at {args.bundle}: run make dist\n")
        return 2
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ctx-distbench-") as td:
        tmp = Path(td)
        embed = embed_rows(args.bundle, tmp, args.embeds)
        seed = make_store(args.bundle, tmp)
        serve = serve_rows(args.bundle, tmp, seed, args.queries)
        app = app_rows(args.bundle, tmp, seed)
    print(f"cpus={os.cpu_count()}, load average at start {load:.1f}\n")
    print(f"Query embedding, {args.embeds} single queries (launcher --bench-embed)")
    print(table(["variant", "backend", "load s", "p50 ms", "p95 ms"], embed))
    print(f"\nctx serve: start to first build_context over ZeroMQ; then {args.queries} "
          "distinct build_context calls, servers in turns")
    print(table(["variant", "engine ready s", "build p50 ms", "build p95 ms"], serve))
    if app:
        print("\nTray app (bundle) under Xvfb + trayer: launch to icon docked, to engine "
              "ready (first build_context over IPC answered)")
        print(table(["run", "tray icon s", "engine ready s"], app))
    return 0


if __name__ == "__main__":
    sys.exit(main())
