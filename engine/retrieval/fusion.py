"""Weighted reciprocal rank fusion of the retrieval lanes' rankings.

Each lane (keyword, vector, recency, live) returns ids best first. RRF scores an id
``sum(weight[lane] / (k + rank))`` over the lanes that ranked it, which needs no
calibration between BM25 scores and cosine similarities and lets the query class
tilt the mix through the weights. Pure and deterministic: equal scores are broken
by best rank, then by ``repr(id)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from engine.errors import InvalidInput

K = TypeVar("K", bound=Hashable)  # what is ranked: chunk ids, turn keys


def rrf(rankings: Mapping[str, Sequence[K]], weights: Mapping[str, float],
        k: int = 60, *, default_weight: float = 1.0,
        limit: int | None = None) -> list[tuple[K, float, dict[str, int]]]:
    """Fuse ``rankings`` (lane -> ids, best first) into ``(id, score, {lane: rank})``.

    Ranks are 1-based; an id listed twice by one lane keeps its best rank there. A
    lane missing from ``weights`` gets ``default_weight``; a lane of weight 0 is
    ignored entirely (it neither scores nor appears in the ranks). ``limit`` keeps
    the best ``limit`` results. Raises InvalidInput for k < 1 or a negative weight.
    """
    if k < 1:
        raise InvalidInput(f"rrf: k must be >= 1, got {k}")
    scores: dict[K, float] = {}
    ranks: dict[K, dict[str, int]] = {}
    for lane in sorted(rankings):
        weight = float(weights.get(lane, default_weight))
        if not weight >= 0.0:  # negative or NaN
            raise InvalidInput(f"rrf: weight of lane {lane!r} must be >= 0")
        if weight == 0.0:
            continue
        for position, item in enumerate(rankings[lane], start=1):
            lane_ranks = ranks.setdefault(item, {})
            if lane in lane_ranks:
                continue
            lane_ranks[lane] = position
            scores[item] = scores.get(item, 0.0) + weight / (k + position)
    ordered = sorted(scores, key=lambda i: (-scores[i], min(ranks[i].values()), repr(i)))
    if limit is not None:
        ordered = ordered[: max(0, limit)]
    return [(item, scores[item], dict(sorted(ranks[item].items()))) for item in ordered]
