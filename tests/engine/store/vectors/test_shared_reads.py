"""Issue 35: a lookup of stored vectors does not wait for a scan of the index.

build_context reads its keyword hits' stored vectors (``read_ahead``) while the vector
lane scans the index in another thread; both only read the arrays. A scan is held
mid-way by events (its ``_scan`` wrapped), so nothing here depends on how fast the
machine is: a lookup that waited for the scan could only answer after its release. A
write that changes rows in place still waits for the scan to end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from engine.store.vectors.exact_index import ExactIndex

GUARD_S = 120  # only against a hang: the order of events is what is checked


def _index_with_held_scan() -> tuple[ExactIndex, threading.Event, threading.Event, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((500, 16)).astype(np.float32)
    index = ExactIndex(16)
    index.add(list(range(1, 501)), x)
    scanning, release = threading.Event(), threading.Event()
    scan = index._scan

    def held_scan(n: int, q: np.ndarray, mat: np.ndarray | None = None) -> np.ndarray:
        scanning.set()
        release.wait(GUARD_S)
        return scan(n, q, mat)

    index._scan = held_scan  # type: ignore[method-assign]
    return index, scanning, release, x


def _while_scan_held(index: ExactIndex, scanning: threading.Event, release: threading.Event,
                     query: np.ndarray, other: Callable[[], object], label: str
                     ) -> tuple[list[str], list[object], list[list[tuple[int, float]]]]:
    order: list[str] = []
    got: list[object] = []
    hits: list[list[tuple[int, float]]] = []
    scanner = threading.Thread(target=lambda: hits.append(index.query(query, 5)))
    scanner.start()
    try:
        assert scanning.wait(GUARD_S), "the scan never started"

        def run() -> None:
            got.append(other())
            order.append(label)

        worker = threading.Thread(target=run)
        worker.start()
        worker.join(GUARD_S if label == "lookup answered" else 0.5)
        order.append("scan released")
    finally:
        release.set()
        scanner.join(GUARD_S)
    worker.join(GUARD_S)
    return order, got, hits


def test_a_lookup_of_stored_vectors_answers_while_a_scan_holds_the_index() -> None:
    index, scanning, release, x = _index_with_held_scan()
    order, got, hits = _while_scan_held(index, scanning, release, x[7],
                                        lambda: index.vectors([8, 9, 999]), "lookup answered")
    assert order == ["lookup answered", "scan released"]
    found = got[0]
    assert isinstance(found, dict) and sorted(found) == [8, 9]
    unit = x[7] / np.linalg.norm(x[7])
    assert np.allclose(found[8], unit, atol=1e-6)
    assert hits and hits[0][0][0] == 8  # the scan answered as well


def test_a_write_in_place_still_waits_for_the_scan() -> None:
    """Replacing a held row's vector (in place) waits until the scan has ended."""
    index, scanning, release, x = _index_with_held_scan()
    order, _, hits = _while_scan_held(index, scanning, release, x[7],
                                      lambda: index.add([8], x[:1]), "write done")
    assert order == ["scan released", "write done"]
    assert hits and hits[0][0][0] == 8  # scored on the row as it was
    assert np.allclose(index.vectors([8])[8], x[0] / np.linalg.norm(x[0]), atol=1e-6)
