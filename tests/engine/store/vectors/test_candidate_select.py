"""Issue 35: the prefilter's candidates picked by a sampled threshold (``select.cut``)
instead of an ``np.argpartition`` of every coarse score. The candidates, and so every
answer, must be those of the argpartition: the same set wherever the set is fixed by
the scores; where a tie crosses the cut, ``cut`` marks the tied rows and the argpartition decides,
as before. ``bench.vector_pick.query_before`` is the index's query as it was (main at
e8dfb37), run on the same arrays: the answers are compared with it to the bit.

Scores are compared with one BLAS thread, the engine's setting (search.blas_threads).
"""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from bench.vector_pick import query_before
from engine.store.config import StoreConfig
from engine.store.vectors import exact_index, select
from engine.store.vectors.exact_index import ExactIndex
from engine.store.vectors.memory import MemoryVectors


def _partition_set(scores: np.ndarray, count: int) -> np.ndarray:
    n = len(scores)
    return np.sort(np.argpartition(scores, n - count)[n - count:])


def _best(scores: np.ndarray, count: int) -> np.ndarray | None:
    """``select.cut``'s positions where they are the argpartition's set (exactly
    ``count``: no tie across the cut); None where a tie leaves the set to its pivots."""
    got = select.cut(scores, count)
    if got is None or len(got[0]) != count:
        return None
    return got[0]


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
        got = _best(scores, count)
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
    got = _best(scores, 3_000)
    assert got is not None
    assert np.array_equal(got, _partition_set(scores, 3_000))
    assert np.isnan(scores[got]).sum() == 40
    scores[:5_000] = np.nan  # more NaN than kept: which of them is the partition's
    assert _best(scores, 3_000) is None


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
        got = _best(scores, count)
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


def _ties_across(index: ExactIndex, q: np.ndarray) -> bool:
    """Whether equal scores cross the coarse cut or the refine's for ``q``."""
    qb = (q / np.linalg.norm(q)) @ index._basis
    coarse = index._coarse(qb[:index._first])
    got = select.cut(coarse, index._candidates)
    assert got is not None
    if len(got[0]) > index._candidates:
        return True
    finer = coarse[got[0]] + index._fine_scores(got[0], qb[index._first:])
    inner = select.cut(finer, index._refine)
    assert inner is not None
    return len(inner[0]) > index._refine


def test_a_store_sized_index_answers_as_the_argpartition_did(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """80k rows of 384 dims, correlated as text vectors are (a shared mean and a few
    strong directions), many held 8 times over (duplicated texts: equal scores cross a
    cut for many queries, as in the 1M store where 33 of 120 queries had such a tie):
    every answer equals the old query's (ids, scores to the bit, order), and most ties
    are settled without the argpartition of every score (the tied rows fall below the
    refine's cut, or after the query's k best). Where they cannot be (the query is a
    row held 2,501 or 5,001 times: the tie is at the top), the argpartition picks, as
    before."""
    rng = np.random.default_rng(11)
    n, dim = 80_000, 384
    mix = rng.standard_normal((dim, dim)).astype(np.float32) * \
        np.linspace(3, 0.2, dim, dtype=np.float32)
    rows = rng.standard_normal((n, dim)).astype(np.float32) @ mix.T + 2.0
    src = rng.choice(n, 4_000, replace=False)
    rows[rng.choice(n, (4_000, 7))] = rows[src][:, None]  # duplicated texts
    rows[100:2_600] = rows[50]  # a row held 2,501 times: a tie across the refine's cut
    rows[20_000:25_000] = rows[19_999]  # 5,001 times: across the coarse cut
    partitions = []
    whole = ExactIndex._candidates_by_partition

    def counted(self: ExactIndex, qb: np.ndarray, total: int,
                coarse: np.ndarray | None = None) -> np.ndarray:
        partitions.append(1)
        return whole(self, qb, total, coarse)

    monkeypatch.setattr(ExactIndex, "_candidates_by_partition", counted)
    with threadpool_limits(1):
        index = _store_index(rows)
        queries = [rng.standard_normal(dim).astype(np.float32) @ mix.T + 2.0
                   for _ in range(16)]
        queries += [rows[j] for j in rng.choice(n, 8)]
        sampled = tied = 0
        for q in queries:
            qb = (q / np.linalg.norm(q)) @ index._basis
            sampled += select._above_threshold(index._coarse(qb[:index._first]),
                                               index._candidates) is not None
            tied += _ties_across(index, q)
            partitions.clear()
            for k in (1, 10, 50, 400):
                assert index.query(q, k) == query_before(index, q, k)
            assert not partitions or _ties_across(index, q)
        assert sampled == len(queries)  # the threshold path picked every one
        assert tied >= 4
        settled = sum(_ties_across(index, q) and not _partitioned(index, q, partitions)
                      for q in queries)
        assert settled >= tied // 2
        for row in (rows[50], rows[19_999]):
            assert _ties_across(index, row) and _partitioned(index, row, partitions)
            assert index.query(row, 50) == query_before(index, row, 50)


def _partitioned(index: ExactIndex, q: np.ndarray, partitions: list[int]) -> bool:
    """Whether a query for ``q``'s 50 best took the argpartition of every score."""
    partitions.clear()
    index.query(q, 50)
    return bool(partitions)


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
            assert _best(index._coarse(qb[:8]), 3_000) is not None
            cand, extra = index._candidates_of(qb, len(index))
            assert extra is None
            assert np.array_equal(cand, index._candidates_by_partition(qb, len(index)))


def _crafted(tied_fine: float) -> tuple[ExactIndex, np.ndarray]:
    """200 unit rows on 8 axes; the prefilter's directions are the axes (the first 4
    scanned), 50 candidates, 10 refined; the query (axes 0 and 4) scores a row's axis
    0 coarse and axis 4 fine. 48 rows lie above the coarse cut, 6 equal rows on it (2 of
    them kept, by the partition's pivots) with ``tied_fine`` on axis 4, 146 below."""
    rng = np.random.default_rng(8)
    x0 = np.concatenate([rng.uniform(0.5, 0.6, 48), np.full(6, 0.45),
                         rng.uniform(0.1, 0.4, 146)])
    x4 = np.concatenate([rng.uniform(0, 0.1, 48), np.full(6, tied_fine),
                         rng.uniform(0, 0.1, 146)])
    order = rng.permutation(200)  # the tied rows scattered over the ids
    rows = np.zeros((200, 8), dtype=np.float32)
    rows[:, 0], rows[:, 4] = x0[order], x4[order]
    rows[:, 1] = np.sqrt(1 - rows[:, 0] ** 2 - rows[:, 4] ** 2)
    index = ExactIndex(8)
    index.add(range(200), rows)
    index.set_prefilter(np.eye(8, dtype=np.float32), 50, first=4, refine=10)
    q = np.zeros(8, dtype=np.float32)
    q[0] = q[4] = 1
    return index, q


def test_rows_tied_at_the_coarse_cut_are_left_out_only_below_the_refines_cut() -> None:
    """Which 2 of the 6 rows tied at the coarse cut the partition keeps decides the
    answer when they score high on the fine directions (they make the refine's 10): the
    argpartition picks, as before. When they score low, neither can make it, and the
    candidates are found without it."""
    with threadpool_limits(1):
        high, q = _crafted(0.8)
        cand, extra = high._candidates_of(q / np.linalg.norm(q) @ np.eye(8, dtype=np.float32),
                                          len(high))
        assert extra is None
        assert np.array_equal(cand, high._candidates_by_partition(
            q / np.linalg.norm(q) @ np.eye(8, dtype=np.float32), len(high)))
        hits = high.query(q, 10)
        assert hits == query_before(high, q, 10)
        assert sum(1 for _, s in hits if s > 0.8) == 2  # two of the tied rows, on top
        low, q = _crafted(-0.5)
        qb = q / np.linalg.norm(q) @ np.eye(8, dtype=np.float32)
        coarse = low._coarse(qb[:4])
        got = select.cut(coarse, 50)
        assert got is not None and len(got[0]) == 54 and int(got[1].sum()) == 6
        cand, extra = low._candidates_of(qb, len(low))
        assert extra is None and len(cand) == 10
        assert not np.isin(cand, got[0][got[1]]).any()
        assert np.array_equal(cand, low._candidates_by_partition(qb, len(low)))
        assert low.query(q, 10) == query_before(low, q, 10)


def test_tied_extras_miss_the_answer_only_after_its_kth_by_score_then_id() -> None:
    scores = np.array([0.9, 0.8, 0.7, 0.7, 0.6], dtype=np.float32)
    extra = np.array([False, False, False, True, False])
    assert exact_index._misses(scores, np.array([1, 2, 3, 9, 5]), extra, 3)
    assert not exact_index._misses(scores, np.array([1, 2, 3, 0, 5]), extra, 3)
    assert not exact_index._misses(scores, np.array([1, 2, 3, 9, 5]), extra, 4)
    assert not exact_index._misses(scores, np.array([1, 2, 3, 9, 5]), ~extra, 2)
    assert exact_index._misses(scores, np.array([1, 2, 3, 9, 5]), extra, 1)


def test_a_tie_the_argpartition_settles_scans_the_rows_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """20 equal rows on top of both cuts (the query is their vector): 20 tied at the
    refine's cut of 10, none of the query's k best sure without them, so the
    argpartition picks, as before; from the coarse scores the query already made, not
    from a second scan of every row (11 ms of the query's 17 at 1M)."""
    rng = np.random.default_rng(9)
    rows = rng.standard_normal((300, 8)).astype(np.float32)
    rows[40:60] = np.eye(8, dtype=np.float32)[0] * 3
    index = ExactIndex(8)
    index.add(range(300), rows)
    index.set_prefilter(np.eye(8, dtype=np.float32), 50, first=4, refine=10)
    scans = []
    coarse = ExactIndex._coarse

    def counted(self: ExactIndex, qfirst: np.ndarray, out: np.ndarray | None = None
                ) -> np.ndarray:
        scans.append(1)
        return coarse(self, qfirst, out)

    monkeypatch.setattr(ExactIndex, "_coarse", counted)
    q = rows[40].copy()
    with threadpool_limits(1):
        for k in (1, 5, 10):
            scans.clear()
            hits = index.query(q, k)
            assert len(scans) == 1, (k, len(scans))
            assert hits == query_before(index, q, k)
            assert all(40 <= cid < 60 for cid, _ in hits)


def test_a_big_indexs_query_makes_no_array_of_a_score_a_row() -> None:
    """A query of a prefiltered index writes its coarse scores (one a row) into a buffer
    its thread keeps, and gathers its candidates' rows a block at a time: its arrays
    stay below the coarse scores' size. Each array of a MiB or more is mapped afresh
    and zeroed in a process that fixes glibc's mmap threshold (the engine does): at a
    million rows a query's five such arrays took a third of its time. The answer is
    the whole-array query's (``query_before``), to the bit."""
    rng = np.random.default_rng(5)
    n, dim = 400_000, 32
    rows = rng.standard_normal((n, dim)).astype(np.float32) + 1.0
    index = ExactIndex(dim, compact=True)
    index.load(np.arange(n), rows)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    index.set_prefilter(basis.astype(np.float32), 20_000, first=16, refine=2_000)
    q = rng.standard_normal(dim).astype(np.float32)
    with threadpool_limits(1):
        first = index.query(q, 50)  # its thread's buffer made
        tracemalloc.start()
        try:
            again = index.query(q, 50)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert first == again == query_before(index, q, 50)
    assert peak < n * 4, peak


def test_queries_at_once_each_write_their_own_coarse_scores() -> None:
    """Two threads query the same prefiltered index at once, many times: each query
    takes a buffer of coarse scores no other query holds (else one query's scores would
    be written over by the other's), so every answer is the one it gives alone; the
    index then keeps as many buffers as ran at once, not one per query."""
    rng = np.random.default_rng(8)
    n, dim = 120_000, 32
    rows = rng.standard_normal((n, dim)).astype(np.float32) + 1.0
    index = ExactIndex(dim)
    index.load(np.arange(n), rows)
    basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    index.set_prefilter(basis.astype(np.float32), 5_000, first=16, refine=500)
    qs = [rng.standard_normal(dim).astype(np.float32) for _ in range(2)]
    with threadpool_limits(1):
        alone = [index.query(q, 20) for q in qs]
        wrong: list[int] = []
        start = threading.Barrier(2)

        def ask(i: int) -> None:
            start.wait()
            for _ in range(60):
                if index.query(qs[i], 20) != alone[i]:
                    wrong.append(i)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not wrong
    assert 1 <= len(index._spare) <= 2
