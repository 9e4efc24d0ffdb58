"""The same store and query give a byte-identical payload in every process.

Chroma's HNSW index is rebuilt in memory at each start for collections under
its sync threshold, in a different order each time, so its approximate results
for 100-999 vectors differ between processes (chroma-core/chroma#2675). Below
``store.exact_search_max`` the engine searches exactly; this test runs two
processes over one real store (real MiniLM vectors) and compares their output.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.embedding.base import Embedder
from engine.facade import ContextEngine

REPO = Path(__file__).resolve().parents[4]
WORDS = ["harbour", "tide", "ferry", "rope", "sail", "anchor", "gull", "storm", "pier", "lantern",
         "keel", "mast", "chart", "compass", "fog", "reef", "buoy", "dock", "crane", "cargo",
         "tariff", "invoice", "ledger", "audit", "budget"]

CHILD = textwrap.dedent("""
    import json, sys
    from engine.facade import ContextEngine
    from engine.flows.search.lanes import vector_lane
    from engine.store.vault.rows import Filters
    eng = ContextEngine.open(sys.argv[1], create=False)
    out = []
    for q in json.loads(sys.argv[2]):
        ids, sims, _ = vector_lane(eng.rt, q, 20, Filters())
        payload = eng.build_context(q, budget=400, now=1.7e9)
        out.append({"lane": [[i, sims[i]] for i in ids], "context": payload.context,
                    "items": [[it.source, it.score] for it in payload.items]})
    eng.close()
    sys.stdout.write(json.dumps(out))
""")


def _run(store: Path, queries: list[str]) -> list[dict[str, object]]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(store), json.dumps(queries)],
                          cwd=REPO, capture_output=True, text=True, timeout=420, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_processes_give_identical_payloads(tmp_path: Path, data_dir: Path, minilm: Embedder,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    rng = random.Random(7)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(300):
        (docs / f"n{i:03}.txt").write_text(" ".join(rng.choice(WORDS) for _ in range(30))
                                           + f" entry {i}\n")
    with ContextEngine.open(data_dir, embedder=minilm) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        vectors = eng.status().vectors
        assert vectors is not None and 100 <= vectors < 1000
    queries = [" ".join(random.Random(k).choice(WORDS) for _ in range(3)) for k in range(12)]
    first, second = _run(data_dir, queries), _run(data_dir, queries)
    differing = [q for q, a, b in zip(queries, first, second, strict=True) if a != b]
    assert differing == []
    assert all(run["lane"] for run in first)
