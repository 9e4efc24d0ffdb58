"""Weighted reciprocal rank fusion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import InvalidInput
from engine.retrieval.fusion import rrf

LANE_NAMES = st.sampled_from(["keyword", "vector", "recency", "live"])
IDS = st.lists(st.integers(0, 30), unique=True, max_size=15)
RANKINGS = st.dictionaries(LANE_NAMES, IDS, max_size=4)
WEIGHTS = st.dictionaries(LANE_NAMES, st.floats(0.0, 3.0, allow_nan=False), max_size=4)


def test_scores_follow_the_formula_and_ranks_are_one_based() -> None:
    out = rrf({"keyword": ["a", "b"], "vector": ["b", "c"]},
              {"keyword": 1.0, "vector": 0.5}, k=10)
    scores = {i: s for i, s, _ in out}
    assert scores["a"] == pytest.approx(1.0 / 11)
    assert scores["b"] == pytest.approx(1.0 / 12 + 0.5 / 11)
    assert scores["c"] == pytest.approx(0.5 / 12)
    assert {i: r for i, _, r in out}["b"] == {"keyword": 2, "vector": 1}
    assert [i for i, _, _ in out] == ["b", "a", "c"]


@given(st.lists(IDS, min_size=1, max_size=4),
       st.lists(st.floats(0.01, 3.0, allow_nan=False), min_size=4, max_size=4),
       st.integers(1, 100))
def test_an_id_first_in_every_lane_is_first(lanes: list[list[int]], weights: list[float],
                                            k: int) -> None:
    top = 99
    rankings = {f"lane{i}": [top, *[x for x in ids if x != top]] for i, ids in enumerate(lanes)}
    weight_map = {f"lane{i}": w for i, w in enumerate(weights)}
    out = rrf(rankings, weight_map, k)
    assert out[0][0] == top
    assert all(rank == 1 for rank in out[0][2].values())


@given(RANKINGS, WEIGHTS, IDS)
def test_weight_zero_removes_a_lane(rankings: dict, weights: dict, extra: list[int]) -> None:
    with_lane = dict(rankings, dropped=extra)
    assert rrf(with_lane, dict(weights, dropped=0.0)) == rrf(rankings, weights)


@given(RANKINGS, WEIGHTS)
def test_output_is_sorted_unique_and_deterministic(rankings: dict, weights: dict) -> None:
    out = rrf(rankings, weights)
    assert out == rrf(dict(reversed(list(rankings.items()))), weights)
    ids = [i for i, _, _ in out]
    assert len(ids) == len(set(ids))
    keys = [(-s, min(r.values()), repr(i)) for i, s, r in out]
    assert keys == sorted(keys)
    active = {lane for lane in rankings if weights.get(lane, 1.0) > 0}
    assert set(ids) == {x for lane in active for x in rankings[lane]}


def test_ties_break_by_best_rank_then_repr() -> None:
    # p and q: ranks (1, 2) and (2, 1): equal scores and equal best rank -> repr order.
    out = rrf({"a": ["p", "q"], "b": ["q", "p"]}, {"a": 1.0, "b": 1.0})
    assert out[0][1] == out[1][1]
    assert [i for i, _, _ in out] == ["p", "q"]
    # Equal scores (1/2 == 1.5/3), different best rank: rank beats repr order.
    out = rrf({"a": ["z"], "b": ["x", "a"]}, {"a": 1.0, "b": 1.5}, k=1)
    assert out[1][1] == out[2][1]
    assert [i for i, _, _ in out] == ["x", "z", "a"]
    out = rrf({"a": ["z"], "b": ["y"]}, {"a": 1.0, "b": 1.0})
    assert [i for i, _, _ in out] == ["y", "z"]


def test_duplicate_ids_in_a_lane_keep_their_best_rank() -> None:
    out = rrf({"a": ["x", "y", "x"]}, {"a": 1.0}, k=1)
    assert {i: r for i, _, r in out}["x"] == {"a": 1}
    assert {i: s for i, s, _ in out}["x"] == pytest.approx(1 / 2)


def test_missing_weight_uses_default_and_limit_truncates() -> None:
    assert rrf({"a": ["x"]}, {}, default_weight=0.0) == []
    assert len(rrf({"a": list(range(10))}, {"a": 1.0}, limit=3)) == 3


@pytest.mark.parametrize(("weights", "k"), [({"a": -1.0}, 60), ({"a": float("nan")}, 60),
                                            ({"a": 1.0}, 0)])
def test_invalid_arguments(weights: dict, k: int) -> None:
    with pytest.raises(InvalidInput):
        rrf({"a": ["x"]}, weights, k)
