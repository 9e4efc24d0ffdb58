"""Issue 32: a search never waits for the vector index's rebuild after a big delete.

The flush of a delete's removals copies every kept row into new arrays; a search that
arrives meanwhile answers from the rows as they were, and the new arrays are swapped in
after. The rebuild is held at its ``before_swap`` point (new arrays built, not yet
swapped) by events, so nothing here depends on how fast the machine is: a search that
waited for the rebuild could only end after the rebuild is released.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.store.config import StoreConfig
from engine.store.vectors import exact_index
from engine.store.vectors.exact_index import ExactIndex, Prefilter
from engine.store.vectors.memory import MemoryVectors

GUARD_S = 120  # only against a hang: the order of events is what is checked


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim)) + 2.0
    x = centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_a_search_answers_while_a_big_flush_is_held_mid_rebuild() -> None:
    n, dim, per_source = 6000, 64, 300
    cfg = StoreConfig(exact_search_max=500, prefilter_dims=24, prefilter_candidates=300,
                      prefilter_fine_dims=8, prefilter_refine=150, float16_above=100_000)
    x = _clustered(n, dim, 5)
    ids = list(range(1, n + 1))
    owned = {s: ids[s * per_source:(s + 1) * per_source] for s in range(n // per_source)}
    vecs = MemoryVectors(dim, lambda sid: owned[sid], cfg)
    vecs.add(ids, x)
    vecs.warm()  # the prefilter too: a rebuild moves its projections as well
    assert vecs.memory()["kind"] == "prefilter"
    query = _clustered(1, dim, 9)[0]
    before = vecs.query(query, 20)
    held_ids, held_rows, pre = vecs._index.held()
    held_ids, held_rows = held_ids.copy(), held_rows.copy()
    gone = list(range(0, n // per_source, 2))  # half of the sources: 3,000 rows

    building, release = threading.Event(), threading.Event()
    order: list[str] = []
    answered: list[list[tuple[int, float]]] = []

    def held_mid_rebuild() -> None:
        building.set()
        release.wait(GUARD_S)

    vecs._index.before_swap = held_mid_rebuild
    flush = threading.Thread(target=vecs.delete_sources, args=(gone,))
    flush.start()
    try:
        assert building.wait(GUARD_S), "the flush never reached its rebuild"

        def search() -> None:
            answered.append(vecs.query(query, 20))
            order.append("search answered")

        searcher = threading.Thread(target=search)
        searcher.start()
        searcher.join(GUARD_S)  # returns at once unless the search waits for the flush
        order.append("flush released")
    finally:
        release.set()
        flush.join(GUARD_S)
    searcher.join(GUARD_S)
    assert order == ["search answered", "flush released"]
    assert answered == [before]  # the rows as they were: same hits, same scores

    dropped = {c for s in gone for c in owned[s]}
    after = vecs.query(query, 20)
    assert vecs.count() == n - len(dropped) and not dropped & {c for c, _ in after}
    keep = ~np.isin(held_ids, sorted(dropped))
    assert pre is not None
    fresh = ExactIndex(dim)  # the kept rows alone, with the prefilter's rows as they were
    fresh.load(held_ids[keep], held_rows[keep], unit=True,
               prefilter=Prefilter(pre.basis, pre.proj[keep], pre.fine[keep]))
    fresh.set_candidates(vecs.candidates_for(len(fresh)), cfg.prefilter_refine)
    assert fresh.query(query, 20) == after  # as if the deleted rows had never been there

def test_every_rebuild_swaps_outside_the_read_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each write that moves every row (a delete, the rebuild an add far out of id order
    was before the side block, the prefilter's set-up, float16 rows) builds its arrays
    with the read lock free; an add far out of id order now rebuilds nothing."""
    monkeypatch.setattr(exact_index, "TAIL_ROWS", 100)  # 1,800 rows after the add's first
    x = _clustered(2000, 32, 7)
    index = ExactIndex(32)
    index.add(list(range(2, 4002, 2)), x)
    seen: list[bool] = []
    index.before_swap = lambda: seen.append(index._lock.locked())
    index.delete(list(range(2, 402, 2)))
    index.add_rebuilt([3, 5, 7], x[:3])  # among the held ids: every row moves
    index.add([9, 11], x[3:5])  # as far below: to the side block, no rebuild
    index.set_prefilter(np.linalg.qr(x[:8].T)[0], 500, first=4)
    index.to_compact()
    assert seen == [False, False, False, False]
    assert len(index) == 1805 and index.ids()[:6] == [3, 5, 7, 9, 11, 402]
