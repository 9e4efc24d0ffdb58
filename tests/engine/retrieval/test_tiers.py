"""Surrogate tier policy and importance score."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.retrieval.config import TierPolicy
from engine.retrieval.tiers import choose_tier, importance_score

DEFAULT = TierPolicy()


def test_disabled_means_raw_chunks() -> None:
    assert choose_tier(TierPolicy(mode="disabled"), age_days=0, importance=1,
                       query_match=1) is None


@pytest.mark.parametrize(("age", "tier"), [
    (-3.0, "full"), (0.0, "full"), (7.0, "full"), (7.01, "gist"), (29.99, "gist"),
    (30.0, "micro"), (400.0, "micro"),
])
def test_age_only_boundaries(age: float, tier: str) -> None:
    policy = TierPolicy(mode="age_only", recent_days=7, old_days=30)
    assert choose_tier(policy, age_days=age, importance=1.0, query_match=1.0) == tier


@pytest.mark.parametrize(("importance", "match", "tier"), [
    (0.25, 1.0, "full"),  # 0.25 + 0.25 * 1.0 == full exactly
    (0.5, 0.0, "full"),
    (0.49, 0.0, "gist"),
    (0.0, 1.0, "gist"),  # 0.25 == gist exactly
    (0.24, 0.0, "micro"),
    (-1.0, -1.0, "micro"),  # clamped to 0
    (5.0, 0.0, "full"),  # clamped to 1
])
def test_importance_boundaries(importance: float, match: float, tier: str) -> None:
    policy = TierPolicy(mode="importance", full=0.5, gist=0.25, query_boost=0.25)
    assert choose_tier(policy, age_days=100, importance=importance, query_match=match) == tier


def test_query_match_can_lift_a_tier() -> None:
    policy = TierPolicy()
    low = choose_tier(policy, age_days=1, importance=0.45, query_match=0.0)
    high = choose_tier(policy, age_days=1, importance=0.45, query_match=1.0)
    assert (low, high) == ("gist", "full")


@pytest.mark.parametrize("kwargs", [
    {"mode": "fancy"}, {"recent_days": 40, "old_days": 30}, {"recent_days": -1},
    {"gist": 0.7, "full": 0.6}, {"query_boost": 2.0}, {"saturation": 0},
    {"access_half_life_days": 0.0}, {"source_half_life_days": -1.0}, {"access_share": 1.5},
])
def test_policy_validation(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        TierPolicy(**kwargs)


@given(st.integers(-5, 10_000), st.one_of(st.none(), st.floats(-10, 1e5, allow_nan=False)),
       st.floats(-10, 1e5, allow_nan=False))
def test_importance_is_in_unit_interval(count: int, last: float | None, age: float) -> None:
    assert 0.0 <= importance_score(count, last, age, DEFAULT) <= 1.0


def test_importance_grows_with_use_and_decays_with_age() -> None:
    scores = [importance_score(n, 1.0, 10.0, DEFAULT) for n in (0, 1, 5, 20, 100)]
    assert scores == sorted(scores) and scores[0] < scores[-1]
    saturated = importance_score(100, 1.0, 10.0, DEFAULT)
    assert saturated == importance_score(20, 1.0, 10.0, DEFAULT)
    assert importance_score(5, 1.0, 10.0, DEFAULT) > importance_score(5, 60.0, 10.0, DEFAULT)
    assert importance_score(0, None, 1.0, DEFAULT) > importance_score(0, None, 365.0, DEFAULT)
    assert importance_score(1000, 0.0, 0.0, DEFAULT) == pytest.approx(1.0)
    assert importance_score(0, None, 1e6, DEFAULT) == pytest.approx(0.0)


def test_importance_follows_its_policy() -> None:
    """Its constants are the [tiers] section's: use alone, age alone, an earlier saturation."""
    assert importance_score(5, 1.0, 365.0, TierPolicy(access_share=0.0)) == pytest.approx(
        0.5 ** (365 / 90))
    assert importance_score(0, None, 0.0, TierPolicy(access_share=1.0)) == 0.0
    assert importance_score(5, 0.0, 0.0, TierPolicy(saturation=5, access_share=1.0)) == 1.0
    assert importance_score(5, 0.0, 0.0, DEFAULT) < 1.0  # saturates at 20 accesses by default
