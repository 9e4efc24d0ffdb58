"""MiniLM on torch (sentence-transformers) vs onnxruntime: latency, throughput, memory.

    python -m bench.embed_bench [--queries 200] [--docs 256] [--onnx-dir DIR]

Each backend loads in its own worker process (so that RSS is its own), then
the parent drives both in turns, query by query, so that both see the same
machine load. Measured: load time; RSS after load and after the batch; single
query embed (one text, the one-thread path search uses) p50/p95; batch encode
throughput (chunk-sized texts, batch 64, all threads). Without ``--onnx-dir``
the export found by ``embedding.backend=auto`` is used, else a fresh one is
made in a temporary folder (about 15 s of torch).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import pct, table

QUERIES = ["what did we decide about the retry policy", "where is the tray icon drawn",
           "how are chunks packed under the budget", "which tests fail on windows",
           "when did the schema migration run", "show the connection file format"]


def _rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(backend: str, onnx_dir: str) -> None:
    """Serve commands on stdin: ``q TEXT`` (ms), ``b N`` (texts/s), ``rss``; JSON lines out."""
    from engine.lab import EmbeddingConfig, make_embedder

    t = time.perf_counter()
    emb = make_embedder(EmbeddingConfig(backend=backend, onnx_dir=onnx_dir))  # type: ignore[arg-type]
    emb.encode(["warm up"])
    load_s = time.perf_counter() - t
    print(json.dumps({"load_s": load_s, "rss_mb": _rss_mb(), "cls": type(emb).__name__}),
          flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.rstrip("\n").partition(" ")
        if cmd == "q":
            t = time.perf_counter()
            emb.encode([arg])
            out: Any = (time.perf_counter() - t) * 1000
        elif cmd == "b":
            n = int(arg)
            texts = [f"chunk {i}: " + " ".join(f"w{(i * 7 + j) % 997}" for j in range(150))
                     for i in range(n)]
            t = time.perf_counter()
            emb.encode(texts)
            out = n / (time.perf_counter() - t)
        elif cmd == "rss":
            out = _rss_mb()
        else:
            break
        print(json.dumps(out), flush=True)


class Worker:
    def __init__(self, backend: str, onnx_dir: str) -> None:
        env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.embed_bench", "--worker", backend,
             "--onnx-dir", onnx_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=env)
        self.ready = self._read()

    def _read(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("benchmark worker died")
        return json.loads(line)

    def ask(self, cmd: str) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd.replace("\n", " ") + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _onnx_dir(arg: str | None, tmp: Path) -> str:
    if arg:
        return arg
    from engine.lab import EmbeddingConfig, find_export
    from engine.lab import export_onnx as export

    found = find_export(EmbeddingConfig())
    if found is not None:
        return str(found)
    export(tmp / "minilm")
    return str(tmp / "minilm")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--docs", type=int, default=256)
    p.add_argument("--onnx-dir")
    p.add_argument("--worker", choices=("torch", "onnx"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.onnx_dir or "")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        onnx_dir = _onnx_dir(args.onnx_dir, Path(tmp))
        workers = {name: Worker(name, onnx_dir) for name in ("torch", "onnx")}
        lat: dict[str, list[float]] = {name: [] for name in workers}
        for i in range(args.queries):
            text = f"{QUERIES[i % len(QUERIES)]} ({i})"  # distinct: no cache anywhere
            order = list(workers) if i % 2 == 0 else list(reversed(workers))
            for name in order:
                lat[name].append(workers[name].ask("q " + text))
        thr = {name: w.ask(f"b {args.docs}") for name, w in workers.items()}
        rss = {name: w.ask("rss") for name, w in workers.items()}
        for w in workers.values():
            w.close()
    rows = []
    for name, w in workers.items():
        rows.append([name, w.ready["load_s"], w.ready["rss_mb"], rss[name], pct(lat[name], 50),
                     pct(lat[name], 95), thr[name]])
    ratio = ["onnx / torch"] + [rows[1][i] / rows[0][i] for i in range(1, 7)]
    print(f"MiniLM, {args.queries} single-text queries (interleaved), batch of {args.docs} "
          f"chunk-sized texts; cpus={os.cpu_count()}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print(table(["backend", "load s", "RSS after load MB", "RSS after batch MB",
                 "query p50 ms", "query p95 ms", "batch texts/s"], rows + [ratio]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
