"""The words only a session uses: a question's rare words, weighed over sessions.

Each content word of the question (``analysis.words``) held by at most
``rerank.session_words_max_share`` of the store's chunks weighs
log(1 + sessions / sessions holding it): a word that few sessions hold tells
look-alike sessions apart. A session scores the weight of the question's words it
holds over the weight of all of them that some session holds (0..1). Computed for
recall only, and only when they are weighed: in choosing the sessions to expand
(``rerank.session_words_expand``) or as the transcript feature ``session_words``.
"""

from __future__ import annotations

import math
from collections import defaultdict

from engine.config import Config
from engine.flows.runtime import Runtime
from engine.retrieval.query import QueryAnalysis

FEATURE = "session_words"
# A word in up to this many chunks is always weighed, whatever the store's size (a small
# store's 2% is a chunk or two). Hand-set: a few long sessions' worth of repeats.
MIN_CHUNKS = 50


def wanted(cfg: Config) -> bool:
    """Whether the sessions to expand or the transcript profile weigh the shares (else
    they are not computed)."""
    return bool(cfg.rerank.session_words_expand or cfg.rerank.session_expand_lane
                or cfg.rerank.profiles.get("transcript", {}).get(FEATURE))


def session_words(rt: Runtime, cfg: Config, analysis: QueryAnalysis) -> dict[str, float]:
    """session id -> the share of the question's rare-word weight it holds."""
    words = [w for w in analysis.words if len(w) >= 3 and w.isalnum()
             and w not in cfg.rerank.stopwords]
    if not words:
        return {}
    limit = max(MIN_CHUNKS, int(cfg.rerank.session_words_max_share * rt.vault.chunk_count()))
    holding, total = rt.vault.sessions_holding(words, limit)
    weights = {w: math.log(1.0 + total / len(s)) for w, s in holding.items() if s}
    whole = sum(weights.values())
    if whole <= 0:
        return {}
    out: dict[str, float] = defaultdict(float)
    for w, weight in weights.items():
        for session in holding[w]:
            out[session] += weight / whole
    return dict(out)
