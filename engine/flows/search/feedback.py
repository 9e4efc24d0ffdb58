"""Feedback from the first hits (recall; ``rerank.feedback``, off by default): after the
first rerank of the window, the query's vector moved toward its best session chunks'
and/or their most distinctive words as a keyword lane of their own
(``engine.retrieval.feedback``), for ``rank_stages`` to rank with (``feedback_use``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult, keyword_hits
from engine.flows.search.plan import QueryPlan
from engine.flows.search.session_expand import TRANSCRIPT, Ranked
from engine.retrieval.config import RerankConfig
from engine.retrieval.feedback import feedback_ids, feedback_terms, feedback_vector
from engine.retrieval.fts_match import KeywordQuery
from engine.retrieval.fusion import rrf


def fed_back(rt: Runtime, plan: QueryPlan, res: LaneResult, ranked: Sequence[Ranked],
             cfg: RerankConfig) -> LaneResult | None:
    """``res`` with feedback from the first hits of ``ranked`` (the window reranked once;
    ``engine.retrieval.feedback``): its query's vector moved toward theirs
    (``cfg.feedback``; the similarities are then read again from stored vectors) and
    their most distinctive words as a keyword lane of their own (``cfg.feedback_terms``);
    None when feedback is off or has nothing to read."""
    if cfg.feedback <= 0 and cfg.feedback_terms <= 0:
        return None
    session_of = {cid: s for cid, _, _ in ranked
                  if (row := res.rows.get(cid)) is not None and row.source_kind == TRANSCRIPT
                  and isinstance(s := row.meta.get("session"), str)}
    top = feedback_ids(ranked, session_of, cfg.feedback_chunks, cfg.feedback_from == "session")
    out = res
    moved = (feedback_vector(res.query_vector, top, res.vectors, cfg.feedback)
             if res.query_vector is not None else None)
    if moved is not None:
        out = dataclasses.replace(out, query_vector=moved, similarity={})
    words = feedback_terms([res.rows[c].text for c in top], set(plan.analysis.terms),
                           cfg.stopwords, rt.vault, cfg.feedback_terms)
    if words:
        out = with_words(rt, plan, out, words, cfg.feedback_terms_weight)
    return None if out is res else out


def with_words(rt: Runtime, plan: QueryPlan, res: LaneResult, words: Sequence[str],
               weight: float) -> LaneResult:
    """``res`` fused again with a keyword lane ("feedback") of ``words`` (word characters
    only, each quoted: no FTS5 syntax gets in), weighted ``weight`` times the keyword
    lane, under the plan's filters and depth."""
    match = KeywordQuery(" OR ".join(f'"{w}"' for w in words))
    hits = keyword_hits(rt, match, plan.depth, plan.filters, plan.cfg)
    lanes = {**res.lanes, "feedback": [cid for cid, _ in hits]}
    weights = {**plan.weights, "feedback": weight * plan.weights.get("keyword", 1.0)}
    rows = dict(res.rows)
    rows.update(rt.vault.chunks([cid for cid, _ in hits if cid not in rows]))
    fused = [f for f in rrf(lanes, weights, k=plan.cfg.search.rrf_k) if f[0] in rows]
    return dataclasses.replace(res, lanes=lanes, rows=rows, fused=fused)
