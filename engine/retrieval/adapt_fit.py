"""Fitting the learned reader: a query map by InfoNCE, a term table by PMI (numpy only).

``fit_map``: W (d x d) starts at the identity and is pulled back toward it
(``identity_weight * ||W - I||^2``), so that little data moves it little. Each step
draws ``batch`` pairs; a query's own document is the positive and the batch's other
documents the negatives (InfoNCE over cosines / ``temperature``, both directions).
``sides="both"`` maps the documents too (bench only: the stored index holds unmapped
vectors). The pairs of ``holdout`` of the sessions are kept out and the map is kept
only when it ranks their documents better than the identity does (mean reciprocal rank
among the held-out documents): on a store it cannot help, recall stays as it was.

``fit_terms``: for each word of the requests, the words that come with it in what
answered (normalized PMI over the pairs; at least ``terms_min_count`` together).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.retrieval.config import AdaptConfig
from engine.retrieval.lexicon import STOPWORDS, words_of

MAX_REQUEST_WORDS = 16  # a request's words counted for the term table
MAX_ANSWER_WORDS = 48  # an answer's distinct words counted (first seen first)


@dataclass(frozen=True)
class MapFit:
    """A fitted map (None when it did not beat the identity on held-out sessions) and
    the held-out mean reciprocal ranks, identity vs map."""

    matrix: np.ndarray | None
    holdout_mrr_identity: float
    holdout_mrr_map: float
    steps: int


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(n, 1e-12)


def pair_mrr(q: np.ndarray, d: np.ndarray, matrix: np.ndarray | None = None,
             sides: str = "query") -> float:
    """Mean reciprocal rank of each query's own document among all the documents."""
    if len(q) == 0:
        return 0.0
    qm = _unit(q @ matrix.T) if matrix is not None else _unit(q)
    dm = _unit(d @ matrix.T) if matrix is not None and sides == "both" else _unit(d)
    scores = qm @ dm.T
    own = np.diag(scores)
    ranks = 1 + (scores > own[:, None]).sum(axis=1)
    return float(np.mean(1.0 / ranks))


def _step_grad(w: np.ndarray, q: np.ndarray, d: np.ndarray, cfg: AdaptConfig,
               sides: str) -> tuple[float, np.ndarray]:
    """InfoNCE loss (both directions) and its gradient in ``w`` for one batch."""
    u = q @ w.T
    un = np.linalg.norm(u, axis=1, keepdims=True)
    uh = u / un
    if sides == "both":
        v = d @ w.T
        vn = np.linalg.norm(v, axis=1, keepdims=True)
        vh = v / vn
    else:
        vh = d
    logits = (uh @ vh.T) / cfg.temperature
    b = len(q)
    rows = logits - logits.max(axis=1, keepdims=True)
    pr = np.exp(rows)
    pr /= pr.sum(axis=1, keepdims=True)
    cols = logits - logits.max(axis=0, keepdims=True)
    pc = np.exp(cols)
    pc /= pc.sum(axis=0, keepdims=True)
    eye = np.eye(b, dtype=logits.dtype)
    loss = -0.5 * (np.log(np.diag(pr) + 1e-12).mean() + np.log(np.diag(pc) + 1e-12).mean())
    g = ((pr - eye) + (pc - eye)) / (2 * b * cfg.temperature)
    d_uh = g @ vh
    d_u = (d_uh - uh * (uh * d_uh).sum(axis=1, keepdims=True)) / un
    grad = d_u.T @ q
    if sides == "both":
        d_vh = g.T @ uh
        d_v = (d_vh - vh * (vh * d_vh).sum(axis=1, keepdims=True)) / vn
        grad += d_v.T @ d
    grad += 2.0 * cfg.identity_weight * (w - np.eye(len(w), dtype=w.dtype))
    return float(loss), grad


def fit_map(q: np.ndarray, d: np.ndarray, groups: Sequence[int], cfg: AdaptConfig, *,
            seed: int = 0, sides: str = "query") -> MapFit:
    """The query map for pairs (``q[i]``, ``d[i]``) of sessions ``groups[i]``."""
    q = _unit(np.asarray(q, dtype=np.float32))
    d = _unit(np.asarray(d, dtype=np.float32))
    rng = np.random.default_rng(seed)
    g = np.asarray(groups)
    sessions = np.unique(g)
    n_held = max(1, round(len(sessions) * cfg.holdout)) if cfg.holdout > 0 else 0
    held = rng.permutation(sessions)[:n_held]
    test = np.isin(g, held)
    train = np.flatnonzero(~test)
    if len(train) < cfg.min_pairs or cfg.steps == 0 or (n_held and len(held) == len(sessions)):
        return MapFit(None, 0.0, 0.0, 0)  # too little, or no session left to check it on
    dim = q.shape[1]
    w: np.ndarray = np.eye(dim, dtype=np.float32)
    m1: np.ndarray = np.zeros_like(w)
    m2: np.ndarray = np.zeros_like(w)
    b1, b2, eps = 0.9, 0.999, 1e-8
    batch = min(cfg.batch, len(train))
    for t in range(1, cfg.steps + 1):
        idx = rng.choice(train, size=batch, replace=False)
        _, grad = _step_grad(w, q[idx], d[idx], cfg, sides)
        m1 = b1 * m1 + (1 - b1) * grad
        m2 = b2 * m2 + (1 - b2) * grad * grad
        w -= (cfg.learning_rate * (m1 / (1 - b1 ** t))
              / (np.sqrt(m2 / (1 - b2 ** t)) + eps)).astype(np.float32)
    if test.any():
        base = pair_mrr(q[test], d[test])
        mapped = pair_mrr(q[test], d[test], w, sides)
    else:  # no sessions to hold out (holdout 0): trust the fit
        base, mapped = 0.0, 1.0
    return MapFit(w if mapped > base else None, base, mapped, cfg.steps)


def _content(words: Sequence[str]) -> list[str]:
    return [w for w in dict.fromkeys(words)
            if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()]


def fit_terms(pairs: Sequence[tuple[str, str]], cfg: AdaptConfig
              ) -> dict[str, tuple[tuple[str, float], ...]]:
    """Request word -> ((answer word, normalized PMI), ...), best first, at most
    ``terms_per_word`` each; words the request itself holds are not translations."""
    n = len(pairs)
    if n == 0 or cfg.terms_per_word == 0:
        return {}
    c_req: Counter[str] = Counter()
    c_ans: Counter[str] = Counter()
    co: Counter[tuple[str, str]] = Counter()
    for request, answer in pairs:
        req = _content(words_of(request))[:MAX_REQUEST_WORDS]
        ans = [w for w in _content(words_of(answer)) if w not in set(req)][:MAX_ANSWER_WORDS]
        c_req.update(req)
        c_ans.update(ans)
        co.update((r, a) for r in req for a in ans)
    best: dict[str, list[tuple[str, float]]] = {}
    for (r, a), c in co.items():
        if c < cfg.terms_min_count:
            continue
        p_ra = c / n
        pmi = math.log(p_ra / ((c_req[r] / n) * (c_ans[a] / n)))
        npmi = pmi / -math.log(p_ra) if p_ra < 1 else 1.0
        if npmi >= cfg.terms_min_npmi:
            best.setdefault(r, []).append((a, round(npmi, 4)))
    return {r: tuple(sorted(ts, key=lambda x: (-x[1], x[0]))[: cfg.terms_per_word])
            for r, ts in sorted(best.items())}
