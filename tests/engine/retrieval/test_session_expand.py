"""Session expansion (issues 26, 31.3): the best coding sessions' chunks join the window:
the first whole, each later one only its chunks closest to the query."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.config import Config
from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.search.lanes import LaneResult, run_lanes
from engine.flows.search.ranking import Ranked, rank_hits, rank_query
from engine.flows.search.session_expand import expand_sessions, ranked_sessions
from engine.retrieval.config import RerankConfig
from engine.store.vault.rows import Filters
from tests.conftest import shared_data

KINDS = ("turn_pair", "tool")
QUERY = "lefthook blocked the commit of the prisma files"


def _cfg(cfg: Config, **rerank: object) -> Config:
    return cfg.with_overrides({"rerank": rerank})


def _added(res: LaneResult, out: LaneResult, added: int, window: int) -> list[int]:
    return [cid for cid, _, _ in out.fused[min(window, len(res.fused)):][:added]]


def test_the_best_sessions_join_the_window_whole(engine: ContextEngine) -> None:
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    res = run_lanes(rt, QUERY, filters=filters)
    cfg = _cfg(rt.cfg, session_expand_others=5000)  # every session whole
    out, added = expand_sessions(rt, cfg, res, filters)
    assert added > 0
    window = rt.cfg.rerank.window
    new = out.fused[min(window, len(res.fused)):][:added]
    sessions = {out.rows[cid].meta["session"] for cid, _, _ in new}
    assert 1 <= len(sessions) <= rt.cfg.rerank.session_expand
    assert all(score == 0.0 for _, score, _ in new)
    assert all(out.rows[cid].kind in ("turn_pair", "tool") for cid, _, _ in new)
    # every chunk of them the expansion reads (rerank.session_expand_chunks) is a candidate
    stored = [r for r in rt.vault.session_chunks(sorted(sessions),
                                                 rt.cfg.rerank.session_expand_chunks)
              if r.kind in ("turn_pair", "tool")]
    assert {r.id for r in stored} <= set(out.rows)
    one = dataclasses.replace(rt.cfg, rerank=dataclasses.replace(rt.cfg.rerank,
                                                                 session_expand=1))
    fewer, n = expand_sessions(rt, _cfg(one, session_expand_others=5000), res, filters)
    assert 0 < n <= added
    assert len({fewer.rows[cid].meta["session"]
                for cid, _, _ in fewer.fused[min(window, len(res.fused)):][:n]}) == 1
    off = dataclasses.replace(rt.cfg, rerank=dataclasses.replace(rt.cfg.rerank,
                                                                 session_expand=0))
    assert expand_sessions(rt, off, res, filters) == (res, 0)


def test_documents_are_not_expanded(engine: ContextEngine) -> None:
    engine.ingest(text="The cache is invalidated on every write to the store.", title="notes")
    res = run_lanes(engine.rt, "cache invalidation")
    assert expand_sessions(engine.rt, engine.rt.cfg, res, None) == (res, 0)


def test_the_sessions_ranked_first_are_expanded_the_later_ones_by_their_closest(
        engine: ContextEngine) -> None:
    """Given the window reranked once, the sessions of its best chunks are expanded in
    that order, even one the fused sum puts last: the first whole, each later one only
    its ``session_expand_others`` chunks closest to the query."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    res = run_lanes(rt, QUERY, filters=filters)
    window = [cid for cid, _, _ in res.fused[: rt.cfg.rerank.window]]
    order = list(dict.fromkeys(res.rows[c].meta["session"] for c in window))
    assert len(order) >= 2
    last, other = order[-1], order[0]  # the fused sum's last session, then its first
    firsts: list[Ranked] = [(c, 1.0, {}) for c in window if res.rows[c].meta["session"] == last]
    seconds: list[Ranked] = [(c, 0.5, {}) for c in window
                             if res.rows[c].meta["session"] == other]
    ranked = firsts[:1] + seconds[:1]
    assert ranked_sessions(ranked, res.rows, 2) == [last, other]
    cfg = _cfg(rt.cfg, session_expand=2, session_expand_others=3)
    out, added = expand_sessions(rt, cfg, res, filters, ranked=ranked)
    new = _added(res, out, added, rt.cfg.rerank.window)
    by_session = {s: [c for c in new if out.rows[c].meta["session"] == s] for s in (last, other)}
    assert len(by_session[last]) + len(by_session[other]) == added
    whole = [r.id for r in rt.vault.session_chunks([last], cfg.rerank.session_expand_chunks)
             if r.kind in KINDS and r.id not in res.rows]
    assert by_session[last] == whole  # the first session: every chunk not in the window
    assert 1 <= len(by_session[other]) <= 3
    rest = [r.id for r in rt.vault.session_chunks([other], cfg.rerank.session_expand_chunks)
            if r.kind in KINDS and r.id not in res.rows]
    assert len(rest) > 3  # so that the cut chose
    vecs = rt.vectors.vectors(rest)
    q = np.asarray(res.query_vector, dtype=np.float32)
    closest = sorted(rest, key=lambda c: -float(vecs[c] @ q))[:3]
    assert set(by_session[other]) == set(closest)
    assert all(c in out.vectors for c in by_session[other])  # read once, reused


def test_each_session_reads_up_to_its_own_chunk_cap(engine: ContextEngine) -> None:
    """``session_expand_chunks`` bounds each session's chunks, not all sessions' together
    (with one cap for all, the session first by id took it whole)."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    res = run_lanes(rt, QUERY, filters=filters)
    cfg = _cfg(rt.cfg, session_expand=2, session_expand_chunks=20, session_expand_others=5000,
               session_expand_by="fused")
    out, added = expand_sessions(rt, cfg, res, filters)
    sessions = [out.rows[c].meta["session"] for c in _added(res, out, added, cfg.rerank.window)]
    assert len(set(sessions)) == 2
    assert all(sessions.count(s) <= 20 for s in set(sessions))


def test_recall_expands_the_sessions_its_first_rerank_ranks_best(
        engine: ContextEngine) -> None:
    """``rerank.session_expand_by = "rerank"``: the sessions expanded are those of the best
    chunks once the window is reranked (not the fused sum's)."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    assert rt.cfg.rerank.session_expand_by == "rerank"
    res, _, _ = rank_query(rt, QUERY, 10, filters=filters, expand_session=True)
    first = rank_hits(rt, rt.cfg, run_lanes(rt, QUERY, filters=filters))
    want = ranked_sessions(first.ranked, res.rows, rt.cfg.rerank.session_expand)
    got = list(dict.fromkeys(res.rows[c].meta["session"] for c, s, _ in res.fused
                             if s == 0.0))
    assert got == want


def test_the_way_sessions_are_chosen_is_checked() -> None:
    with pytest.raises(ConfigError, match="session_expand_by"):
        RerankConfig(session_expand_by="best")
