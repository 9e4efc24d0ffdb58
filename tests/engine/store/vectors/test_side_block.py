"""Issue 35: rows added far below the last ids (a crash's leftovers embedded after a
restart, at a million rows) go to a small side block that every read looks at, not a
copy-on-write rebuild of every row. Answers are those of the merged index to the bit
(scores, ranking, ties by id, the prefilter's candidates); a seal merges the block in.

Scores are compared with one BLAS thread, the engine's setting (search.blas_threads):
with more, OpenBLAS splits a product's rows between threads where it likes, and a row's
last bit then depends on the split.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from engine.store.config import StoreConfig
from engine.store.vectors import exact_index
from engine.store.vectors.exact_index import ExactIndex
from engine.store.vectors.memory import MemoryVectors
from engine.store.vectors.snapshot import SnapshotFile

DIM = 24


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _merged(index: ExactIndex, pre: tuple[np.ndarray, int, int, int] | None) -> ExactIndex:
    """The same rows loaded at once in id order (no side block), the same prefilter."""
    ids, vecs = index.ids_and_vectors()
    ref = ExactIndex(index.dim, compact=index.compact)
    ref.load(ids, vecs.astype(np.float16) if index.compact else vecs, unit=True)
    if pre is not None:
        basis, candidates, first, refine = pre
        ref.set_prefilter(basis, candidates, first=first, refine=refine)
    assert ref.side_rows == 0
    return ref


def _check(index: ExactIndex, truth: dict[int, np.ndarray],
           pre: tuple[np.ndarray, int, int, int] | None, rng: np.random.Generator) -> None:
    ids = sorted(truth)
    assert index.ids() == ids and len(index) == len(ids)
    got_ids, got = index.ids_and_vectors()
    assert got_ids.tolist() == ids
    want = np.stack([truth[i] for i in ids])
    assert np.allclose(got, want, atol=1e-3 if index.compact else 1e-6)
    some = [ids[j] for j in rng.choice(len(ids), 7)] + [-5, 10**9]
    looked = index.vectors(some)
    assert sorted(looked) == sorted(set(some) & set(ids))
    for c, v in looked.items():
        assert np.array_equal(v, got[ids.index(c)])
    ref = _merged(index, pre)
    queries = [rng.standard_normal(DIM).astype(np.float32) for _ in range(4)]
    queries += [got[j] for j in rng.choice(len(ids), 3)]  # rows with duplicates: ties
    for q in queries:
        for k in (1, 5, 40):
            hits = index.query(q, k)
            assert hits == ref.query(q, k)  # ids, order and scores, to the bit
            if pre is None:  # the full scan: against plain numpy too
                exact = got @ (q / np.linalg.norm(q))
                assert all(abs(s - exact[ids.index(c)]) < 1e-5 for c, s in hits)
                assert exact.max() - 1e-5 <= hits[0][1]
                assert np.sum(exact > hits[-1][1] + 1e-5) < len(hits)


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_adds_far_adds_deletes_and_queries_answer_as_the_merged_index(
        monkeypatch: pytest.MonkeyPatch, compact: bool, seed: int) -> None:
    monkeypatch.setattr(exact_index, "TAIL_ROWS", 40)
    monkeypatch.setattr(exact_index, "SIDE_ROWS", 120)
    # candidates gathered and scored 16 rows a block: blocks that hold main and side rows
    monkeypatch.setattr(exact_index, "BLOCK_BYTES", 1)
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, DIM)) * 2
    index = ExactIndex(DIM, compact=compact)
    truth: dict[int, np.ndarray] = {}
    pre: tuple[np.ndarray, int, int, int] | None = None
    top, most_aside, folds = 0, 0, 0

    def rows(k: int) -> np.ndarray:
        x = centres[rng.integers(0, 6, k)] + 0.4 * rng.standard_normal((k, DIM))
        if k > 2 and truth:  # some rows equal to held ones: tied scores
            held = sorted(truth)
            for j in rng.choice(k, k // 3, replace=False):
                x[j] = truth[held[int(rng.integers(len(held)))]]
        return x.astype(np.float32)

    def put(ids: list[int], x: np.ndarray) -> None:
        before = index.side_rows
        index.add(ids, x)
        for c, v in zip(ids, _unit(x), strict=True):
            truth[c] = v.astype(np.float16).astype(np.float32) if compact else v
        nonlocal most_aside, folds
        most_aside = max(most_aside, index.side_rows)
        folds += int(before > 0 and index.side_rows < before)

    with threadpool_limits(1, user_api="blas"):
        for step in range(70):
            held = sorted(truth)
            free = sorted(set(range(1, top)) - set(held))
            op = "append" if len(held) < 200 else rng.choice(
                ["append", "tail", "far", "far", "replace", "delete", "prefilter"])
            if op == "append":
                k = int(rng.integers(20, 90))
                ids = list(range(top + 3, top + 3 + 3 * k, 3))
                top = ids[-1]
                put(ids, rows(k))
            elif op == "tail":
                near = [c for c in free if c > held[-30]]
                ids = sorted(rng.choice(near, min(len(near), 12), replace=False).tolist())
                put(ids, rows(len(ids)))
            elif op == "far":  # more than TAIL_ROWS held rows after: the side block
                low = [c for c in free if c < held[len(held) - 60]]
                ids = rng.choice(low, min(len(low), int(rng.integers(1, 45))),
                                 replace=False).tolist()
                put(ids, rows(len(ids)))  # in any order
            elif op == "replace":  # main rows and side rows alike
                ids = rng.choice(held, 15, replace=False).tolist()
                put(ids, rows(15))
            elif op == "delete":
                gone = rng.choice(held, 25, replace=False).tolist()
                index.delete(gone)
                for c in gone:
                    del truth[c]
            elif pre is None:
                basis = np.linalg.qr(rng.standard_normal((DIM, 8)))[0].astype(np.float32)
                pre = (basis, 60, 4, 25)
                index.set_prefilter(basis, 60, first=4, refine=25)
            if step % 4 == 3 or op == "far":
                _check(index, truth, pre, rng)
        _check(index, truth, pre, rng)
    assert most_aside > 0 and folds > 0  # both paths ran: rows aside, merged in place


def test_an_add_far_below_the_last_ids_costs_what_it_adds_not_a_copy() -> None:
    """At 200k float16 rows an add of 500 rows below the first ones allocated a copy of
    every row (13 MB here, 1 GB at a million) before the side block; now what it adds."""
    n, dim = 200_000, 32
    rng = np.random.default_rng(5)
    index = ExactIndex(dim, compact=True)
    index.add(list(range(1000, 1000 + 2 * n + 2000, 2)), rng.standard_normal((n + 1000, dim)))
    index.delete(list(range(1000 + 2 * n, 1000 + 2 * n + 2000, 2)))  # room for 1,000 more
    far = rng.standard_normal((500, dim)).astype(np.float32)
    tracemalloc.start()
    try:
        index.add(list(range(1, 1000, 2)), far)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert index.side_rows == 500 and len(index) == n + 500
    assert peak < index.nbytes() / 20
    assert index.ids()[:3] == [1, 3, 5] and index.ids()[-1] == 998 + 2 * n
    tracemalloc.start()
    try:  # the seal's merge: in place (here in room already held: a realloc's growth
        # is traced whole though the kernel moves its pages without a copy)
        index.held()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert index.side_rows == 0 and peak < index.nbytes() / 10
    ids, rows, _ = index.held()
    assert ids.tolist()[:3] == [1, 3, 5] and np.all(ids[1:] > ids[:-1])
    assert np.allclose(rows[:500].astype(np.float32), _unit(far), atol=1e-3)


def test_a_snapshot_sealed_with_a_side_block_reopens_with_the_same_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_index, "TAIL_ROWS", 100)
    snap = SnapshotFile(tmp_path / "vectors.snap", b"k" * 32)
    cfg = StoreConfig(exact_search_max=500, prefilter_dims=24, prefilter_candidates=300,
                      prefilter_fine_dims=8, prefilter_refine=150, float16_above=1000)
    rng = np.random.default_rng(11)
    x = _unit(rng.standard_normal((3000, 64)) + 1.0)
    ids = list(range(2, 6002, 2))
    late = list(range(101, 401, 2))  # 150 rows far below the last ids
    every = sorted(ids + late)
    first = MemoryVectors(64, lambda _sid: [], cfg, snapshot=snap,
                          fingerprints=lambda: (every, ["ab" * 8] * len(every)),
                          version=lambda: 4)
    with threadpool_limits(1, user_api="blas"):
        first.add(ids, x)
        first.warm()  # float16 rows and the prefilter
        first.add(late, x[:150] + 0.01)
        held = first._index
        assert held.side_rows == 150 and held.prefiltered and held.compact
        queries = list(_unit(rng.standard_normal((12, 64)) + 1.0)) + list(x[:4])
        before = [first.query(q, 10) for q in queries]
        assert first.save_snapshot()
        assert held.side_rows == 0  # merged in at the seal
        assert [first.query(q, 10) for q in queries] == before
        again = MemoryVectors(64, lambda _sid: [], cfg, snapshot=snap)
        sealed = again.read_snapshot()
        assert sealed is not None and sealed.prefilter is not None
        assert sealed.ids.tolist() == every
        again.load(sealed.ids, sealed.vectors, unit=True, prefilter=sealed.prefilter)
        assert [again.query(q, 10) for q in queries] == before


def test_a_far_add_waits_for_a_scan_and_the_scan_answers_from_the_rows_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The side block is swapped in under the read lock held alone: a query that holds it
    shared reads the main rows and the side block as one state (here: before the add),
    and a lookup meanwhile still answers. A scan is held by events (its ``_scan``
    wrapped), so only the order of events is checked."""
    import threading

    monkeypatch.setattr(exact_index, "TAIL_ROWS", 100)
    guard = 120
    rng = np.random.default_rng(4)
    x = rng.standard_normal((500, 16)).astype(np.float32)
    index = ExactIndex(16)
    index.add(list(range(2, 1002, 2)), x)
    index.add([3], x[7:8] * 2)  # aside already: the scan reads both parts
    assert index.side_rows == 1
    scanning, release = threading.Event(), threading.Event()
    scan = index._scan

    def held_scan(n: int, q: np.ndarray, mat: np.ndarray | None = None) -> np.ndarray:
        scanning.set()
        release.wait(guard)
        return scan(n, q, mat)

    index._scan = held_scan  # type: ignore[method-assign]
    order: list[str] = []
    hits: list[list[tuple[int, float]]] = []
    scanner = threading.Thread(target=lambda: hits.append(index.query(x[7], 3)))
    scanner.start()
    try:
        assert scanning.wait(guard), "the scan never started"
        looked = index.vectors([3, 16])  # a lookup does not wait
        assert sorted(looked) == [3, 16]
        def far_add() -> None:
            index.add([5], x[7:8])
            order.append("far add done")

        writer = threading.Thread(target=far_add)
        writer.start()
        writer.join(0.5)
        order.append("scan released")
    finally:
        release.set()
        scanner.join(guard)
    writer.join(guard)
    assert order == ["scan released", "far add done"]
    assert [c for c, _ in hits[0]][:2] == [3, 16]  # equal rows: ties by id
    assert 5 not in {c for c, _ in hits[0]}  # answered from the rows before the add
    assert index.side_rows == 2
    assert [c for c, _ in index.query(x[7], 3)][:3] == [3, 5, 16]  # ties by id
