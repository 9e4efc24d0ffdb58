"""Feedback from the first hits (pseudo-relevance feedback, Rocchio): the query's vector
moved toward the vectors of the chunks a first rerank put on top.

A question paraphrases its answer; the chunks ranked first by the question's own words
and meaning usually come from the right session and speak its words. Their mean vector,
added to the query's at ``beta`` (``rerank.feedback``), reads the question in the
session's words: ``q' = normalize(q / |q| + beta * mean(v_i / |v_i|))``. The keyword
side (``rerank.feedback_terms``) adds the first hits' most distinctive words, not the
question's, as a keyword lane of their own at a lower weight (RM3-like).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from engine.retrieval.fts_match import TermCounts
from engine.retrieval.query import WORD_RE, stem


def feedback_vector(query: np.ndarray, top: Sequence[int], vectors: Mapping[int, np.ndarray],
                    beta: float) -> np.ndarray | None:
    """``query`` moved toward the mean of the unit vectors of ``top`` (chunk ids, those
    without a vector or of another size skipped) at ``beta``, unit length; None when
    ``beta`` is 0, no vector is there or the query is zero."""
    q = np.asarray(query, dtype=np.float32)
    qn = float(np.linalg.norm(q))
    have = [np.asarray(vectors[c], dtype=np.float32) for c in top
            if c in vectors and np.shape(vectors[c]) == q.shape]
    if beta <= 0 or not have or qn == 0:
        return None
    m = np.stack(have)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
    moved = q / qn + beta * m.mean(axis=0)
    n = float(np.linalg.norm(moved))
    return (moved / n).astype(np.float32) if n > 0 else None


def feedback_ids(ranked: Sequence[tuple[int, float, object]], session_of: Mapping[int, str],
                 m: int, same_session: bool) -> list[int]:
    """The chunk ids that feed back: the first ``m`` of ``ranked`` that belong to a session
    (``session_of``: chunk id -> session), or with ``same_session`` the first ``m`` of the
    best-ranked session's."""
    out: list[int] = []
    best: str | None = None
    for cid, _, _ in ranked:
        s = session_of.get(cid)
        if s is None:
            continue
        if best is None:
            best = s
        if same_session and s != best:
            continue
        out.append(cid)
        if len(out) >= m:
            break
    return out


MIN_TERM = 3  # shorter words say little and match everywhere
MAX_LOOKUPS = 30  # words whose chunk counts are looked up (the store reads each one's postings)


def feedback_terms(texts: Sequence[str], query_stems: Collection[str],
                   stopwords: Collection[str], counts: TermCounts, n: int) -> list[str]:
    """The ``n`` words most distinctive of ``texts`` (the first hits: RM3-like keyword
    feedback): each word's mean share of a text's words times log(chunks / chunks holding
    it) in the store (``counts``), leaving out the question's own words (by stem),
    ``stopwords``, numbers and words under ``MIN_TERM`` letters; only the
    ``MAX_LOOKUPS`` most frequent words in ``texts`` are looked up."""
    if n <= 0 or not texts:
        return []
    share: dict[str, float] = {}
    for text in texts:
        words = [w for w in WORD_RE.findall(text.lower())
                 if len(w) >= MIN_TERM and w.isalpha() and w not in stopwords
                 and stem(w) not in query_stems]
        for w in words:
            share[w] = share.get(w, 0.0) + 1.0 / (len(words) * len(texts))
    if not share:
        return []
    top = sorted(share, key=lambda w: (-share[w], w))[:MAX_LOOKUPS]
    total = max(counts.chunk_count(), 1)
    df = counts.doc_frequency(top)
    score = {w: share[w] * math.log(total / df[w]) for w in top if 0 < df.get(w, 0) < total}
    return sorted((w for w in score if score[w] > 0), key=lambda w: (-score[w], w))[:n]
