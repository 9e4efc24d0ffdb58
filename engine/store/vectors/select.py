"""The best ``count`` of a vector query's scores without sorting or partitioning them all.

The prefilter keeps the best 20,000 of a million coarse scores (``ExactIndex.query``):
``np.argpartition`` of every score took about as long as the scan that made them
(7-12 ms at 1M, one core). Here a threshold read off a fixed sample of the scores (every
``SAMPLE_STEP``-th) keeps the rows that surely hold the best ``count`` with room to
spare, and only those are partitioned (under 1 ms).

Same answers as the argpartition: its set is fixed by the scores alone whenever no score
equal to the last one kept is left out (a tie across the cut), and that is checked; with
such a tie (rows with equal scores, e.g. duplicated texts, straddling the cut) which of
them ``np.argpartition`` keeps depends on its pivots, so ``cut`` hands the tied rows to
the caller, which either shows that the pick cannot change its answer or takes
``np.argpartition`` itself, as before. NaN counts as the highest score, as in
``np.argpartition``.
"""

from __future__ import annotations

import math

import numpy as np

SAMPLE_STEP = 64  # every 64th score (15,625 of a million) sets the threshold
# A threshold put this many standard deviations of the sample's count (binomial) below
# the expected place of the cut: the rows above it fall short of ``count`` (a second,
# full partition) only for scores whose order is far from random along the rows.
MARGIN_SD = 6.0
SAMPLED_ABOVE = 65_536  # fewer scores are partitioned whole (the sample would not pay)

# float16 -> float32 of every bit pattern: a lookup reads the same values as ``astype``
# (it is made by it) in half the time at a query's 2000 x 384 rows.
_HALF = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def as_float32(rows: np.ndarray) -> np.ndarray:
    """``rows.astype(np.float32)``, bit for bit (float16 rows through ``_HALF``)."""
    if rows.dtype == np.float16:
        return np.take(_HALF, rows.view(np.uint16))
    return rows.astype(np.float32, copy=False)


def cut(scores: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(the positions, ascending, of every score not below the ``count``-th highest;
    which of them equal it): exactly ``count`` positions where no tie crosses the cut,
    more where one does (then ``np.argpartition`` keeps the rows above it and as many
    of the tied ones as make ``count``, which by its pivots). None where NaN is at the
    cut, or ``count`` is not below the number of scores."""
    n = len(scores)
    if not 0 < count < n:
        return None
    pos = _above_threshold(scores, count) if n > SAMPLED_ABOVE else None
    sub = scores if pos is None else scores[pos]
    m = len(sub)
    kth = np.partition(sub, m - count)[m - count]
    if np.isnan(kth):
        return None
    keep = np.flatnonzero(~(sub < kth))  # NaN kept: it counts as the highest
    tied = sub[keep] == kth
    return (keep if pos is None else pos[keep]), tied


def _above_threshold(scores: np.ndarray, count: int) -> np.ndarray | None:
    """The positions of the scores not below a threshold from the sample that at least
    ``count`` of them pass (None where fewer do, or the sample would keep most)."""
    n = len(scores)
    sample = scores[::SAMPLE_STEP]
    s = len(sample)
    share = count / n
    expect = share * s
    above = math.ceil(expect + MARGIN_SD * math.sqrt(expect * (1 - share)) + 1)
    if above * 2 > s:
        return None
    t = np.partition(sample, s - above)[s - above]
    below = scores < t
    pos = np.flatnonzero(np.logical_not(below, out=below))  # NaN passes: the highest
    return pos if len(pos) >= count else None
