"""The memory backend's index past store.exact_search_max: a prefilter on the vectors'
top principal directions picks the candidates scored exactly; adds, deletes and a
reload keep it right."""

from __future__ import annotations

import numpy as np

from engine.store.config import StoreConfig
from engine.store.vectors.memory import MemoryVectors


def _clustered(n: int, dim: int = 64, seed: int = 3) -> np.ndarray:
    """Unit vectors around 20 centres, with a shared mean (as embeddings have)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim)) + 2.0
    x = centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _index(n: int) -> tuple[MemoryVectors, np.ndarray]:
    cfg = StoreConfig(exact_search_max=500, prefilter_dims=24, prefilter_candidates=300,
                      prefilter_fine_dims=8, prefilter_refine=150, float16_above=1000)
    vecs = MemoryVectors(64, lambda _sid: [], cfg)
    x = _clustered(n)
    vecs.add(list(range(1, n + 1)), x)
    return vecs, x


def test_the_prefilter_finds_what_the_full_scan_finds() -> None:
    vecs, x = _index(3000)
    queries = _clustered(40, seed=9)
    full = [list(np.argsort(-(x @ q), kind="stable")[:20] + 1) for q in queries]
    vecs.warm()
    assert vecs.memory()["kind"] == "prefilter"
    found = [vecs.query(q, 20) for q in queries]
    got = [[c for c, _ in hits] for hits in found]
    overlap = np.mean([len(set(a) & set(b)) / 20 for a, b in zip(got, full, strict=True)])
    assert overlap > 0.95
    for q, hits in zip(queries, found, strict=True):  # cosines, best first
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)
        c, s = hits[0]
        assert abs(s - float(x[c - 1] @ (q / np.linalg.norm(q)))) < 5e-4  # float16 rows


def test_adds_deletes_and_reloads_keep_the_prefilter_right() -> None:
    vecs, x = _index(3000)
    vecs.warm()
    new = _clustered(1, seed=11)[0]
    vecs.add([99_999], new[None, :])
    assert vecs.query(new, 1)[0][0] == 99_999
    vecs.delete([99_999, 5])
    assert all(c not in (99_999, 5) for c, _ in vecs.query(new, 50))
    assert all(c != 5 for c, _ in vecs.query(x[4], 50))
    vecs.load(np.arange(1, 3001), x, unit=True)
    assert vecs.query(x[6], 1)[0][0] == 7
    assert vecs.count() == 3000


def test_a_big_index_keeps_float16_rows_and_more_candidates_as_it_grows() -> None:
    vecs, x = _index(3000)
    vecs.warm()
    float32_rows = x.nbytes + 3000 * 32 * 4  # the rows and their projections, float32
    assert vecs.memory()["bytes"] < 0.7 * float32_rows  # float16 rows
    held = vecs.vectors([1, 2])
    assert held[1].dtype == np.float32 and np.allclose(held[1], x[0], atol=1e-3)
    cfg = StoreConfig(prefilter_candidates=4000, prefilter_candidates_per_million=20_000)
    big = MemoryVectors(64, lambda _sid: [], cfg)
    assert big.candidates_for(100_000) == 4000 and big.candidates_for(1_000_000) == 20_000


def test_a_sealed_big_index_reopens_with_its_prefilter(tmp_path) -> None:
    from engine.store.vectors.snapshot import SnapshotFile

    snap = SnapshotFile(tmp_path / "vectors.snap", b"k" * 32)
    cfg = StoreConfig(exact_search_max=500, prefilter_dims=24, prefilter_candidates=300,
                      float16_above=1000)
    x = _clustered(3000)
    ids = list(range(1, 3001))
    first = MemoryVectors(64, lambda _sid: [], cfg, snapshot=snap,
                          fingerprints=lambda: (ids, ["ab" * 8] * 3000), version=lambda: 4)
    first.add(ids, x)
    first.warm()
    queries = _clustered(20, seed=9)
    before = [first.query(q, 10) for q in queries]
    assert first.save_snapshot()
    again = MemoryVectors(64, lambda _sid: [], cfg, snapshot=snap)
    sealed = again.read_snapshot()
    assert sealed is not None and sealed.prefilter is not None
    again.load(sealed.ids, sealed.vectors, unit=True, prefilter=sealed.prefilter)
    assert again.memory()["kind"] == "prefilter"  # at once: no warm-up needed
    assert [again.query(q, 10) for q in queries] == before


def test_an_index_that_grows_past_the_bound_turns_float16() -> None:
    cfg = StoreConfig(exact_search_max=500, float16_above=2000)
    vecs = MemoryVectors(64, lambda _sid: [], cfg)
    x = _clustered(3000)
    vecs.add(list(range(1, 1501)), x[:1500])
    small = vecs.memory()["bytes"]
    vecs.add(list(range(1501, 3001)), x[1500:])
    assert vecs.memory()["bytes"] < 2 * small * 0.6  # float16 rows: half of float32
    assert vecs.query(x[2500], 1)[0][0] == 2501
