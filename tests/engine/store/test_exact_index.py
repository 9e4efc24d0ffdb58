"""The exact index: the same set of vectors ranks the same, however it was built."""

from __future__ import annotations

import numpy as np

from engine.store.exact_index import ExactIndex
from engine.store.vector_ids import KeyedIds


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
