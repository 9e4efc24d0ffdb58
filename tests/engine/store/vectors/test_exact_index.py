"""The exact index: the same set of vectors ranks the same, however it was built."""

from __future__ import annotations

import numpy as np
import pytest

from engine.store.vectors import exact_index
from engine.store.vectors.exact_index import ExactIndex
from engine.store.vectors.ids import KeyedIds


def test_order_of_adds_and_deletes_does_not_change_results() -> None:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((300, 32)).astype(np.float32)
    vecs[10] = vecs[20] = vecs[30]  # exact ties: broken by chunk id
    ids = list(range(1, 301))
    a = ExactIndex(32)
    a.add(ids, vecs)
    b = ExactIndex(32)
    order = rng.permutation(300)
    for part in np.array_split(order, 7):
        b.add([ids[i] for i in part], vecs[part])
    b.add([999], rng.standard_normal((1, 32)))
    b.delete([999, 5000])
    for q in rng.standard_normal((20, 32)).astype(np.float32):
        assert a.query(q, 25) == b.query(q, 25)
    top = a.query(vecs[30], 3)
    assert [cid for cid, _ in top] == [11, 21, 31]
    a.delete([11, 21])
    assert [cid for cid, _ in a.query(vecs[30], 1)] == [31]
    assert len(a) == 298 and a.ids()[:3] == [1, 2, 3]


def test_keyed_ids_round_trip_and_look_random() -> None:
    ids = KeyedIds(b"k" * 32)
    enc = ids.encode(range(1, 200))
    assert ids.decode(enc) == list(range(1, 200))
    assert enc != sorted(enc) and len(set(enc)) == 199
    assert KeyedIds(b"j" * 32).decode(enc) == [None] * 199  # another key's ids are not ours
    assert ids.decode(["zz", "00" * 16]) == [None, None]


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32) + 0.5
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_compact_index_keeps_half_the_bytes_and_ranks_as_the_full_scan() -> None:
    """float16 rows: with as many candidates as rows the prefilter changes nothing, and
    every hit's cosine is the float32 one to float16's precision."""
    x, queries = _unit(2000, 48, 1), _unit(30, 48, 2)
    full, small = ExactIndex(48), ExactIndex(48, compact=True)
    for index in (full, small):
        index.add(list(range(1, 2001)), x)
    assert small.compact and small.nbytes() < 0.6 * full.nbytes()
    basis = np.linalg.qr(np.random.default_rng(3).standard_normal((48, 8)))[0]
    small.set_prefilter(basis, 2000)
    for q in queries:
        want = [c for c, _ in full.query(q, 20)]
        got = small.query(q, 20)
        assert len(set(want) & {c for c, _ in got}) >= 19  # float16 may swap a near-tie
        for c, s in got:
            assert abs(s - float(x[c - 1] @ q)) < 5e-4


def test_a_compact_index_grows_in_place_and_finds_by_id() -> None:
    x = _unit(5000, 16, 4)
    index = ExactIndex(16, compact=True)
    for part in np.array_split(np.arange(5000)[::-1], 9):  # out of order, in batches
        index.add([int(i) + 1 for i in part], x[part])
    index.add([7, 7], np.vstack([x[0], x[1]]))  # the last of repeated ids wins
    assert len(index) == 5000 and index.ids()[:3] == [1, 2, 3]
    got = index.vectors([7, 4999, 123_456])
    assert set(got) == {7, 4999}
    assert np.allclose(got[7], x[1], atol=1e-3) and np.allclose(got[4999], x[4998], atol=1e-3)
    index.delete([7, 8, 123_456])
    assert len(index) == 4998 and 7 not in index.vectors([7])
    assert index.query(x[9], 1)[0][0] == 10


def test_the_refine_stage_keeps_the_full_scans_hits() -> None:
    """Scan 4 directions, score the candidates again on 12, keep the best for the exact
    score: as many candidates as rows gives the full scan's hits; fewer, nearly all."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((4000, 24)) * np.linspace(3, 0.3, 24)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    queries = x[rng.choice(4000, 25, replace=False)] + 0.05
    index = ExactIndex(24, compact=True)
    index.add(list(range(4000)), x)
    full = [{c for c, _ in index.query(q, 10)} for q in queries]
    basis = np.linalg.svd(x, full_matrices=False)[2][:12].T
    index.set_prefilter(basis, 4000, first=4, refine=4000)
    assert [{c for c, _ in index.query(q, 10)} for q in queries] == full
    index.set_prefilter(basis, 1500, first=4, refine=200)
    got = [{c for c, _ in index.query(q, 10)} for q in queries]
    assert np.mean([len(a & b) / 10 for a, b in zip(got, full, strict=True)]) > 0.95
    index.add([9999], x[:1])  # later rows get both projections
    assert 9999 in {c for c, _ in index.query(x[0], 2)}


def test_an_add_just_below_the_last_ids_moves_only_the_tail(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources embedded out of order (a window of them finished in another order) add
    rows a little below the last held ids: only the rows after them move, in place, and
    nothing is rebuilt (at a million rows a rebuild per add made an ingest quadratic).
    The index then holds and ranks exactly what one add in id order would have."""
    monkeypatch.setattr(exact_index, "TAIL_ROWS", 1000)  # of the 3,000 rows here
    rng = np.random.default_rng(8)
    n, dim = 3000, 24
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    ids = list(range(1, 3 * n, 3))  # gaps: later adds fall between held ids
    whole = ExactIndex(dim, compact=True)
    whole.add(ids, vecs)
    index = ExactIndex(dim, compact=True)
    rebuilt: list[bool] = []
    index.before_swap = lambda: rebuilt.append(True)
    index.add(ids[:2000], vecs[:2000])
    index.add(ids[2500:], vecs[2500:])  # the later source finished first
    index.add(ids[2000:2500], vecs[2000:2500])  # then the earlier one: 500 rows move
    more = rng.standard_normal((40, dim)).astype(np.float32)
    between = [i + 1 for i in ids[-40:]]  # each between two held ids near the end
    index.add(between, more)
    whole.add(between, more)
    assert rebuilt == []
    assert index.ids() == whole.ids() == sorted(ids + between)
    for q in rng.standard_normal((10, dim)).astype(np.float32):
        assert index.query(q, 30) == whole.query(q, 30)
    index.add([2], rng.standard_normal((1, dim)))  # far below: the side block, no rebuild
    assert rebuilt == [] and index.side_rows == 1 and index.ids()[:3] == [1, 2, 4]


def test_a_compact_index_projects_added_rows_as_it_holds_them() -> None:
    """Rows added to a compact index with a prefilter are projected as held (float16),
    as setting the prefilter up projects them: the candidates a query keeps do not
    depend on whether a row came before or after the prefilter."""
    rng = np.random.default_rng(5)
    dim, n = 16, 600
    ids = list(range(1, n + 1))
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    basis = np.linalg.qr(rng.standard_normal((dim, 8)))[0].astype(np.float32)
    grown = ExactIndex(dim, compact=True)
    grown.add(ids[:100], vecs[:100])
    grown.set_prefilter(basis, 50, first=4, refine=20)
    grown.add(ids[100:], vecs[100:])  # appended after the prefilter: projected on add
    grown.add(ids[:10], vecs[:10])  # held rows replaced: projected on add too
    whole = ExactIndex(dim, compact=True)
    whole.add(ids, vecs)
    whole.set_prefilter(basis, 50, first=4, refine=20)
    pre, want = grown.held()[2], whole.held()[2]
    assert pre is not None and want is not None
    assert np.array_equal(pre.proj, want.proj) and np.array_equal(pre.fine, want.fine)
