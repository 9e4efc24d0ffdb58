"""Issue 35: the prefilter's candidates picked by a sampled threshold (``select.best``)
instead of an ``np.argpartition`` of every coarse score. The candidates, and so every
answer, must be those of the argpartition: the same set wherever the set is fixed by
the scores; where a tie crosses the cut, ``best`` says so and the argpartition decides,
as before. ``bench.vector_pick.query_before`` is the index's query as it was (main at
e8dfb37), run on the same arrays: the answers are compared with it to the bit.

Scores are compared with one BLAS thread, the engine's setting (search.blas_threads).
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from bench.vector_pick import query_before
from engine.store.config import StoreConfig
from engine.store.vectors import select
from engine.store.vectors.exact_index import ExactIndex
from engine.store.vectors.memory import MemoryVectors


def _partition_set(scores: np.ndarray, count: int) -> np.ndarray:
    n = len(scores)
    return np.sort(np.argpartition(scores, n - count)[n - count:])


def _tie_across_cut(scores: np.ndarray, count: int) -> bool:
    kth = np.sort(scores)[len(scores) - count]
    return int(np.count_nonzero(scores >= kth)) != count


@pytest.mark.parametrize("n,count", [(1_000, 50), (30_000, 4_000), (200_000, 4_000),
                                     (300_000, 6_000), (100_000, 99_000)])
def test_best_is_the_argpartitions_set_or_says_there_is_a_tie(n: int, count: int) -> None:
    rng = np.random.default_rng(n + count)
    sampled = 0
    for trial in range(12):
        scores = rng.standard_normal(n).astype(np.float32)
        if trial % 3 == 1:  # coarse values: many ties, some of them across the cut
            scores = (np.round(scores * 300) / 300).astype(np.float32)
        if trial % 3 == 2:  # duplicated rows: equal scores scattered over the rows
            scores[rng.choice(n, n // 5)] = scores[rng.choice(n, n // 5)]
        got = select.best(scores, count)
        if _tie_across_cut(scores, count):
            assert got is None
            continue
        assert got is not None
        assert np.array_equal(got, _partition_set(scores, count))
        sampled += n > select.SAMPLED_ABOVE and select._above_threshold(scores, count) \
            is not None
    if n > select.SAMPLED_ABOVE and count * 4 < n:
        assert sampled  # the threshold path, not only the whole partition, was checked


def test_best_with_nan_keeps_them_as_argpartition_does() -> None:
    rng = np.random.default_rng(3)
    scores = rng.standard_normal(150_000).astype(np.float32)
    scores[rng.choice(len(scores), 40, replace=False)] = np.nan
    got = select.best(scores, 3_000)
    assert got is not None
    assert np.array_equal(got, _partition_set(scores, 3_000))
    assert np.isnan(scores[got]).sum() == 40
    scores[:5_000] = np.nan  # more NaN than kept: which of them is the partition's
    assert select.best(scores, 3_000) is None


def test_best_where_the_sample_misleads_partitions_every_score() -> None:
    """The highest scores all at the sampled rows: the threshold passes too few, and the
    whole set is partitioned; the highest all between them: more pass. Same set."""
    n, count = 200_000, 4_000
    rng = np.random.default_rng(5)
    low = rng.uniform(0, 1, n).astype(np.float32)
    on_sample = low.copy()
    on_sample[::select.SAMPLE_STEP] += 2
    assert select._above_threshold(on_sample, count) is None
    off_sample = low.copy()
    off_sample[1::select.SAMPLE_STEP] += 2
    for scores in (on_sample, off_sample, np.sort(low), np.sort(low)[::-1].copy()):
        got = select.best(scores, count)
        assert got is not None and np.array_equal(got, _partition_set(scores, count))


def test_half_rows_read_as_float32_to_the_bit() -> None:
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert np.array_equal(select.as_float32(every).view(np.uint32),
                          every.astype(np.float32).view(np.uint32), equal_nan=False)
    rows = np.random.default_rng(2).standard_normal((300, 40)).astype(np.float16)
    got = select.as_float32(rows[::2])
    assert got.dtype == np.float32 and got.shape == (150, 40)
    assert np.array_equal(got.view(np.uint32), rows[::2].astype(np.float32).view(np.uint32))


def _store_index(rows: np.ndarray) -> ExactIndex:
    """Rows through the memory backend as a store holds them (its default prefilter
    config: 64 + 64 directions, 4,000 candidates, 2,000 refined; float16 rows here)."""
    cfg = StoreConfig(float16_above=50_000)
    vectors = MemoryVectors(rows.shape[1], lambda _sid: [], cfg)
    vectors.load(np.arange(10, 10 + len(rows)), rows)
    vectors.warm()
    index = vectors._index
    assert index.prefiltered and index.compact and len(index) > select.SAMPLED_ABOVE
    assert (index._candidates, index._refine) == (4_000, 2_000)
    return index


def test_a_store_sized_index_answers_as_the_argpartition_did() -> None:
    """80k rows of 384 dims, correlated as text vectors are (a shared mean and a few
    strong directions), some duplicated: the threshold path picks the candidates
    (checked), and every answer equals the old query's: ids, scores to the bit, order;
    where duplicates tie across a cut (the query is a row held 2,500 or 5,000 times),
    the argpartition's pick, as before."""
    rng = np.random.default_rng(11)
    n, dim = 80_000, 384
    mix = rng.standard_normal((dim, dim)).astype(np.float32) * \
        np.linspace(3, 0.2, dim, dtype=np.float32)
    rows = rng.standard_normal((n, dim)).astype(np.float32) @ mix.T + 2.0
    rows[rng.choice(n, 3_000)] = rows[rng.choice(n, 3_000)]  # duplicated texts
    rows[100:2_600] = rows[50]  # a row held 2,501 times: a tie across the refine's cut
    rows[20_000:25_000] = rows[19_999]  # 5,001 times: across the coarse cut
    with threadpool_limits(1):
        index = _store_index(rows)
        queries = [rng.standard_normal(dim).astype(np.float32) @ mix.T + 2.0
                   for _ in range(12)]
        queries += [rows[j] for j in rng.choice(n, 6)]
        fast = 0
        for q in queries:
            qn = q / np.linalg.norm(q)
            qb = qn @ index._basis
            coarse = index._coarse(qb[:index._first])
            fast += select._above_threshold(coarse, index._candidates) is not None and \
                select.best(coarse, index._candidates) is not None
            for k in (1, 10, 50, 400):
                assert index.query(q, k) == query_before(index, q, k)
        assert fast >= 12
        for tied in (rows[50], rows[19_999]):
            qb = (tied / np.linalg.norm(tied)) @ index._basis
            assert np.array_equal(index._candidates_of(qb, len(index)),
                                  index._candidates_by_partition(qb, len(index)))
            assert index.query(tied, 50) == query_before(index, tied, 50)
        coarse = index._coarse(((rows[19_999] / np.linalg.norm(rows[19_999]))
                                @ index._basis)[:index._first])
        assert select.best(coarse, index._candidates) is None  # the tie was there


def test_the_side_blocks_candidates_are_the_argpartitions() -> None:
    """Rows held aside (far below the last ids) are read in the merged order: the
    threshold's candidates there are the argpartition's too."""
    rng = np.random.default_rng(4)
    dim = 32
    index = ExactIndex(dim, compact=True)
    index.add(range(1_000_000, 1_000_000 + 2 * 90_000, 2),
              rng.standard_normal((90_000, dim)).astype(np.float32) + 0.3)
    basis = np.linalg.qr(rng.standard_normal((dim, 16)))[0].astype(np.float32)
    index.set_prefilter(basis, 3_000, first=8, refine=500)
    index.add(range(1, 4_001, 2), rng.standard_normal((2_000, dim)).astype(np.float32) + 0.3)
    assert index.side_rows == 2_000
    with threadpool_limits(1):
        for _ in range(6):
            q = rng.standard_normal(dim).astype(np.float32) + 0.3
            qb = (q / np.linalg.norm(q)) @ basis
            assert select.best(index._coarse(qb[:8]), 3_000) is not None
            assert np.array_equal(index._candidates_of(qb, len(index)),
                                  index._candidates_by_partition(qb, len(index)))
