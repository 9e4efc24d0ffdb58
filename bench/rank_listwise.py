"""Listwise fit of rerank weights, and session-grouped cross-validation of a fit.

The coordinate ascent of ``bench.fit_rank`` climbs the benchmark's own hit@5 on a
grid, which on about a hundred questions settles on whichever weights the first
features found (the transcript profile's fit moved ``session_similarity`` to 8 and
stayed there). Here every question is one softmax over its window: the weights
maximize the log-probability of the answering candidates (all of them together),
with an L2 penalty on the weights of standardized features; L-BFGS finds the
optimum. ``grouped_cv`` estimates how a fit does on sessions it did not see.

Pure functions over plain arrays (``Prepared.items`` of ``bench.fit_rank``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Item = tuple[np.ndarray, np.ndarray, Any, int]  # (features, labels, keys, relevant)


def fit_listwise(items: Sequence[Item], l2: float) -> np.ndarray:
    """Weights (one per feature column, in raw feature units) that maximize the mean
    log-probability of each question's answering candidates under a softmax of the
    scores, less ``l2 / 2 * |w|^2`` on standardized features."""
    from scipy.optimize import minimize

    used = [(x, y) for x, y, _, _ in items if len(y) and y.any()]
    if not used:
        raise ValueError("no question has an answering candidate")
    stacked = np.concatenate([x for x, _ in used])
    mu, sd = stacked.mean(0), stacked.std(0) + 1e-6
    zs = [((x - mu) / sd, y > 0) for x, y in used]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros_like(w)
        for z, pos in zs:
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            pa = p[pos].sum() + 1e-12
            total -= float(np.log(pa))
            grad -= (p[pos] @ z[pos]) / pa - p @ z
        n = len(zs)
        return total / n + l2 * float(w @ w) / 2, grad / n + l2 * w

    res = minimize(loss, np.zeros(stacked.shape[1]), jac=True, method="L-BFGS-B")
    return np.asarray(res.x / sd)


def grouped_cv(items: Sequence[Item], groups: Sequence[str], fit: Callable[[list[Item]],
               np.ndarray], score: Callable[[Item, np.ndarray], float], folds: int = 5,
               seeds: Sequence[int] = (0, 1, 2)) -> float:
    """Mean held-out ``score`` of ``fit`` over ``folds`` folds of whole groups (sessions:
    no question of a held-out session is fitted on), averaged over ``seeds`` shuffles."""
    names = sorted(set(groups))
    means = []
    for seed in seeds:
        order = names[:]
        random.Random(seed).shuffle(order)
        total = 0.0
        for k in range(folds):
            held = set(order[k::folds])
            train = [it for it, g in zip(items, groups, strict=True) if g not in held]
            test = [it for it, g in zip(items, groups, strict=True) if g in held]
            if not test or not train:
                continue
            w = fit(train)
            total += sum(score(it, w) for it in test)
        means.append(total / len(items))
    return float(np.mean(means))
