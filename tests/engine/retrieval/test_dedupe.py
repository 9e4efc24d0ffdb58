"""Near-duplicate suppression: cosine for items with vectors, shingles for the rest."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine.errors import InvalidInput
from engine.retrieval.dedupe import suppress_near_duplicates, text_similarity


def test_keeps_the_higher_ranked_of_two_near_duplicates() -> None:
    vectors = {"a": [1.0, 0.0, 0.0], "b": [0.99, 0.05, 0.0], "c": [0.0, 1.0, 0.0]}
    kept, dropped = suppress_near_duplicates(["b", "a", "c"], vectors, 0.9)
    assert kept == ["b", "c"]
    assert dropped == {"a": "b"}


def test_scale_does_not_matter_and_threshold_is_inclusive() -> None:
    v = np.array([[1.0, 0.0], [10.0, 0.0], [np.cos(0.5), np.sin(0.5)]])
    cos = float(np.cos(0.5))
    kept, dropped = suppress_near_duplicates([1, 2, 3], v, threshold=cos)
    assert kept == [1] and dropped == {2: 1, 3: 1}
    kept, _ = suppress_near_duplicates([1, 2, 3], v, threshold=min(1.0, cos + 0.01))
    assert kept == [1, 3]


def test_callable_lookup_and_missing_or_zero_vectors_are_kept() -> None:
    table = {"a": [1.0, 0.0], "b": [1.0, 0.0], "z": [0.0, 0.0]}
    kept, dropped = suppress_near_duplicates(["a", "b", "z", "none"], table.get)
    assert kept == ["a", "z", "none"] and dropped == {"b": "a"}


def test_text_fallback_for_items_without_vectors() -> None:
    text = "the build failed because the cache directory was not writable on the runner"
    texts = {"chunk": text, "live": text + " today", "other": "an unrelated note about lunch"}
    kept, dropped = suppress_near_duplicates(
        ["chunk", "live", "other"], {"chunk": [0.3, 0.4]}, texts=texts, text_threshold=0.8)
    assert kept == ["chunk", "other"] and dropped == {"live": "chunk"}


def test_items_with_vectors_are_not_compared_by_text_with_each_other() -> None:
    same = "identical words in both chunks of the store"
    kept, _ = suppress_near_duplicates(["a", "b"], {"a": [1.0, 0.0], "b": [0.0, 1.0]},
                                       texts={"a": same, "b": same})
    assert kept == ["a", "b"]


def test_repeated_ids_appear_once() -> None:
    kept, dropped = suppress_near_duplicates(["a", "a"], {"a": [1.0]})
    assert kept == ["a"] and dropped == {}


@pytest.mark.parametrize("threshold", [0.0, 1.5, -0.2])
def test_invalid_threshold(threshold: float) -> None:
    with pytest.raises(InvalidInput):
        suppress_near_duplicates(["a"], {"a": [1.0]}, threshold)


def test_mismatched_inputs() -> None:
    with pytest.raises(InvalidInput):
        suppress_near_duplicates(["a", "b"], {"a": [1.0, 0.0], "b": [1.0]})
    with pytest.raises(InvalidInput):
        suppress_near_duplicates(["a", "b"], np.zeros((3, 2)))
    assert suppress_near_duplicates([], {}) == ([], {})


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(0, 25), st.just(4)),
                  elements=st.floats(-1, 1, allow_nan=False)),
       st.floats(0.5, 1.0))
def test_properties(matrix: np.ndarray, threshold: float) -> None:
    ids = list(range(len(matrix)))
    kept, dropped = suppress_near_duplicates(ids, matrix, threshold)
    assert kept == sorted(kept)
    assert set(kept) | set(dropped) == set(ids) and not set(kept) & set(dropped)
    norms = np.linalg.norm(matrix, axis=1)
    unit = {i: matrix[i] / norms[i] for i in ids if norms[i] > 1e-12}
    for item, winner in dropped.items():
        assert winner in kept and winner < item
        assert float(unit[item] @ unit[winner]) >= threshold - 1e-4
    vec_kept = [i for i in kept if i in unit]
    for x in vec_kept:
        for y in vec_kept:
            if x < y:
                assert float(unit[x] @ unit[y]) < threshold + 1e-4


def test_text_similarity() -> None:
    a = "one two three four five six"
    assert text_similarity(a, a) == 1.0
    assert text_similarity(a, "seven eight nine ten") == 0.0
    assert text_similarity(a, a.upper()) == 1.0
    assert text_similarity(a, "one two three something else entirely") < 0.8
    assert text_similarity("hi there", "There, hi!", shingle=3) == 1.0  # short: word sets
