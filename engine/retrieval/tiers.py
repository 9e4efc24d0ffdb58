"""Surrogate tier policy: how much of a source the payload carries.

Every stored source has three extractive surrogates: ``full``, ``gist`` and
``micro``. A policy picks one per source, so that fresh or important sources keep
detail and old, rarely used ones shrink to a line, and the budget goes further.
``disabled`` means "no surrogates, use the raw chunks". All inputs (ages, access
counts) are computed by the caller from one fixed ``now``, so choices are
deterministic.
"""

from __future__ import annotations

import math
from typing import Literal

from engine.retrieval.config import TierPolicy

Tier = Literal["full", "gist", "micro"]


def choose_tier(policy: TierPolicy, *, age_days: float, importance: float,
                query_match: float) -> Tier | None:
    """The tier for one source, or None under ``disabled`` (use raw chunks).

    ``age_days`` is the source's age at the caller's ``now`` (negative ages, from
    clock skew, count as 0); ``importance`` and ``query_match`` are in [0, 1]
    (clamped), the latter being how well the source matched this query.
    """
    if policy.mode == "disabled":
        return None
    if policy.mode == "age_only":
        age = max(0.0, _finite(age_days, 0.0))
        if age <= policy.recent_days:
            return "full"
        if age >= policy.old_days:
            return "micro"
        return "gist"
    score = _clamp(importance) + policy.query_boost * _clamp(query_match)
    if score >= policy.full:
        return "full"
    if score >= policy.gist:
        return "gist"
    return "micro"


def importance_score(access_count: int, last_access_age_days: float | None,
                     source_age_days: float, policy: TierPolicy) -> float:
    """How much a source matters, in [0, 1], from its use and its age.

    The policy's ``access_share`` of the score comes from use: ``log1p(access_count)``
    scaled so that ``saturation`` accesses count fully, decayed by the age of the last
    access (half-life ``access_half_life_days``; a never-accessed source scores 0 here).
    The rest is freshness: the source's own age, decayed with half-life
    ``source_half_life_days``. Logarithmic use keeps one very busy source from
    drowning every other. (The policy checked its ranges when it was made.)
    """
    saturation, access_share = policy.saturation, policy.access_share
    access_half_life_days = policy.access_half_life_days
    source_half_life_days = policy.source_half_life_days
    count = max(0, int(access_count))
    use = min(1.0, math.log1p(count) / math.log1p(saturation))
    if count and last_access_age_days is not None:
        use *= 0.5 ** (max(0.0, _finite(last_access_age_days, math.inf)) / access_half_life_days)
    elif count:  # accessed, but when is unknown: assume as old as the source
        use *= 0.5 ** (max(0.0, _finite(source_age_days, math.inf)) / access_half_life_days)
    fresh = 0.5 ** (max(0.0, _finite(source_age_days, math.inf)) / source_half_life_days)
    return _clamp(access_share * use + (1.0 - access_share) * fresh)


def _finite(value: float, fallback: float) -> float:
    value = float(value)
    return value if not math.isnan(value) else fallback


def _clamp(value: float) -> float:
    value = float(value)
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))
