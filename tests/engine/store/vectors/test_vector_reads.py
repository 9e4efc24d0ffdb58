"""The ranking reads window vectors from the vector index: they must be the vectors the
vault's embedding cache holds (model space, the rotation undone), on both the exact
in-memory path and the HNSW path, and the query hands back its hits' vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.facade import ContextEngine
from engine.flows.search.ranking import stored_vectors
from engine.store.vectors.index import ChromaVectors


@pytest.fixture(autouse=True)
def _embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the embedded Chroma store (the default keeps vectors in
    memory, tests/engine/store/vectors/test_vector_snapshot.py)."""
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")

TEXT = "\n\n".join(
    f"Section {i}. The harbour ferry {i} leaves at dawn with rope, sail and cargo number {i}."
    for i in range(40))


@pytest.mark.parametrize("exact_max", [20_000, 0])
def test_index_vectors_equal_the_vault_cache(data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                             exact_max: int) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", str(exact_max))
    monkeypatch.setenv("CTX__CHUNKING__TARGET_TOKENS", "32")
    monkeypatch.setenv("CTX__CHUNKING__MAX_TOKENS", "40")
    monkeypatch.setenv("CTX__CHUNKING__OVERLAP_TOKENS", "4")
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
        rt = eng.rt
        ids = [r[0] for r in rt.vault._query("SELECT id FROM chunks ORDER BY id")]
        assert len(ids) > 5
        rows = rt.vault.chunks(ids)
        want = stored_vectors(rt, list(rows.values()))
        got = rt.vectors.vectors(ids + [10**9])  # an unknown id is left out
        assert set(got) == set(want) == set(ids)
        for cid in ids:
            assert np.allclose(got[cid], want[cid], atol=1e-5)
        found: dict[int, np.ndarray] = {}
        hits = rt.vectors.query(rt.embed_query("ferry cargo"), 5, found=found)
        assert [c for c, _ in hits] and set(found) == {c for c, _ in hits}
        q = rt.embed_query("ferry cargo")
        for cid, sim in hits:
            assert np.allclose(found[cid], want[cid], atol=1e-5)
            assert abs(float(want[cid] @ q) - sim) < 1e-4
        assert isinstance(rt.vectors, ChromaVectors)
        assert (rt.vectors._exact_index() is None) == (exact_max == 0)
        assert eng.build_context("ferry cargo", budget=300).items


def test_keyword_pruning_counts_are_cached_until_the_next_chunk_write(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        vault = eng.rt.vault
        eng.wait(eng.ingest(text="The ferry leaves at dawn.", title="one"))
        first = vault.doc_frequency(["Ferry", "dawn", "absent"])
        assert first == {"ferry": 1, "dawn": 1, "absent": 0}
        assert first == vault._vocab_counts(list(first))  # what the vocabulary says
        eng.wait(eng.ingest(text="Another ferry, another harbour.", title="two"))
        assert vault.doc_frequency(["ferry", "harbour"]) == {"ferry": 2, "harbour": 1}
