"""Whether Chroma's queries hold the GIL: why build_context's two threads barely overlap.

    python -m bench.chroma_gil STORE [--queries 100] [--store-model fake]

Runs ``--queries`` HNSW queries (random unit vectors, 50 hits with their embeddings,
as the vector lane asked before the vector cache) on STORE's collection: alone, then
beside a thread that spins in pure Python. A call that released the GIL would take
about as long beside the spinner (the machine has 2 cores); one that holds it waits
for the spinner's switch interval each time it needs the GIL back. Printed: both
times, their ratio, and the spinner's rate beside the queries against its rate alone.
STORE must be over ``store.exact_search_max`` vectors (else HNSW is not used). The
store is only read.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench.models import embedding_config
from bench.stats import machine_state


def spin_rate(seconds: float, during: object = None) -> tuple[float, float]:
    """(additions per second of a spinning thread, seconds ``during()`` took beside it;
    ``seconds`` of spinning alone when ``during`` is None)."""
    stop, count = threading.Event(), [0]

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1
        count[0] = n

    thread = threading.Thread(target=spin)
    t = time.perf_counter()
    thread.start()
    if during is None:
        time.sleep(seconds)
    else:
        during()  # type: ignore[operator]
    took = time.perf_counter() - t
    stop.set()
    thread.join()
    return count[0] / took, took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--store-model", default="fake", choices=("minilm", "fake"))
    args = ap.parse_args(argv)
    os.environ.setdefault("CTX_PASSPHRASE", "bench-only")
    from engine import ContextEngine
    from engine.lab import ChromaVectors, make_embedder

    before = machine_state()
    embedder = make_embedder(embedding_config(model=args.store_model))
    with ContextEngine.open(Path(args.store), embedder=embedder) as eng:
        store = eng.rt.vectors
        assert isinstance(store, ChromaVectors), "only a Chroma store is measured"
        col = store._col  # the raw Chroma collection
        rng = np.random.default_rng(1)
        qs = [rng.standard_normal((1, store.rotation.dim)).astype(np.float32)
              for _ in range(args.queries)]

        def queries() -> None:
            for q in qs:
                col.query(query_embeddings=q, n_results=50, include=["embeddings"])

        queries()  # warm
        t = time.perf_counter()
        queries()
        alone = time.perf_counter() - t
        rate_alone, _ = spin_rate(0.5)
        rate_beside, beside = spin_rate(0, queries)
    print(f"{args.queries} Chroma queries: alone {alone * 1000:.0f} ms, beside a spinning "
          f"Python thread {beside * 1000:.0f} ms ({beside / alone:.2f}x); the spinner ran "
          f"at {rate_beside / rate_alone:.2f} of its rate alone")
    print(f"load average before {before}, after {machine_state()} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
