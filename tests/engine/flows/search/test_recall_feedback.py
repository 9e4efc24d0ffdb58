"""Feedback from the first hits in recall's ranking (``engine.flows.search.feedback``,
``rank_stages``): with ``rerank.feedback`` the query's vector moves toward the first
rerank's best session chunks; with ``rerank.feedback_terms`` their words join as a keyword
lane; off by default (the pure part: tests/engine/retrieval/test_feedback.py)."""

from __future__ import annotations

import numpy as np

from engine.facade import ContextEngine
from engine.flows.runtime import Runtime
from engine.flows.search.feedback import fed_back
from engine.flows.search.lanes import run_lanes
from engine.flows.search.plan import QueryPlan, plan_query
from engine.flows.search.ranking import rank_hits, rank_query
from engine.retrieval.feedback import feedback_vector
from engine.store.vault.rows import Filters
from tests.conftest import shared_data

KINDS = ("turn_pair", "tool")
QUERY = "lefthook blocked the commit of the prisma files"


def plan_of(rt: Runtime) -> QueryPlan:
    return plan_query(rt, QUERY, rt.cfg, filters=Filters(kinds=KINDS))


def test_recall_ranks_with_the_moved_query_only_when_feedback_is_on(
        engine: ContextEngine) -> None:
    """Off (the default), recall's final rerank reads the question's own vector; on
    ("final"), the vector moved toward its first rerank's best session chunks, and every
    window similarity is read again with it."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    plain = run_lanes(rt, QUERY, filters=filters)
    first = rank_hits(rt, rt.cfg, plain)
    q0 = plain.query_vector
    assert q0 is not None
    assert fed_back(rt, plan_of(rt), plain, first.ranked, rt.cfg.rerank) is None  # off by default
    res, _, _ = rank_query(rt, QUERY, 10, filters=filters, expand_session=True)
    assert res.query_vector is not None and np.array_equal(res.query_vector, q0)
    on = rt.cfg.with_overrides({"rerank": {"feedback": 0.5, "feedback_chunks": 3}})
    fed = fed_back(rt, plan_of(rt), plain, first.ranked, on.rerank)
    assert fed is not None and fed.similarity == {}
    top = [c for c, _, _ in first.ranked if plain.rows[c].source_kind == "transcript"][:3]
    want = feedback_vector(q0, top, plain.vectors | first.vectors, 0.5)
    rt.cfg = on
    res_on, _, _ = rank_query(rt, QUERY, 10, filters=filters, expand_session=True)
    assert want is not None and res_on.query_vector is not None
    assert not np.allclose(res_on.query_vector, q0)
    assert float(res_on.query_vector @ want) > 0.999
    # "expand": the moved query only chooses the sessions; the final rerank reads the
    # question's own vector
    rt.cfg = on.with_overrides({"rerank": {"feedback_use": "expand"}})
    res_expand, _, _ = rank_query(rt, QUERY, 10, filters=filters, expand_session=True)
    assert res_expand.query_vector is not None and np.array_equal(res_expand.query_vector, q0)


def test_keyword_feedback_adds_a_lane_of_the_first_hits_words(engine: ContextEngine) -> None:
    """``feedback_terms``: recall fuses a "feedback" keyword lane of the first hits' words
    (none by default)."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    plain = run_lanes(rt, QUERY, filters=Filters(kinds=KINDS))
    first = rank_hits(rt, rt.cfg, plain)
    on = rt.cfg.with_overrides({"rerank": {"feedback_terms": 5}})
    fed = fed_back(rt, plan_of(rt), plain, first.ranked, on.rerank)
    assert fed is not None and "feedback" not in plain.lanes
    assert fed.lanes["feedback"]
    assert fed.query_vector is plain.query_vector  # the dense side stays off
    assert {c for c, _, _ in fed.fused} <= set(fed.rows)
    assert any("feedback" in ranks for _, _, ranks in fed.fused)
