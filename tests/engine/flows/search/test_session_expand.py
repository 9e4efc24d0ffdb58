"""Session expansion (issues 26, 31.3): the best coding sessions' chunks join the window:
the first whole, each later one only its chunks closest to the query."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.config import Config
from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult, run_lanes
from engine.flows.search.ranking import Ranked, rank_hits, rank_query
from engine.flows.search.session_expand import (
    expand_sessions,
    ranked_sessions,
    worded_rows,
    worded_sessions,
)
from engine.retrieval.config import RerankConfig
from engine.store.vault.rows import ChunkRow, Filters
from tests.conftest import shared_data

KINDS = ("turn_pair", "tool")
QUERY = "lefthook blocked the commit of the prisma files"


def _cfg(cfg: Config, **rerank: object) -> Config:
    return cfg.with_overrides({"rerank": rerank})


def _added(res: LaneResult, out: LaneResult, added: int, window: int) -> list[int]:
    return [cid for cid, _, _ in out.fused[min(window, len(res.fused)):][:added]]


def _synced(engine: ContextEngine) -> tuple[Runtime, Filters, LaneResult, list[int], list[str]]:
    """The shared transcripts synced, the query's lanes over the session kinds, the
    window's chunk ids and its sessions in window order."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=KINDS)
    res = run_lanes(rt, QUERY, filters=filters)
    window = [cid for cid, _, _ in res.fused[: rt.cfg.rerank.window]]
    return rt, filters, res, window, list(dict.fromkeys(res.rows[c].meta["session"]
                                                        for c in window))


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
    rt, filters, res, window, order = _synced(engine)
    assert len(order) >= 2
    last, other = order[-1], order[0]  # the fused sum's last session, then its first
    firsts: list[Ranked] = [(c, 1.0, {}) for c in window if res.rows[c].meta["session"] == last]
    seconds: list[Ranked] = [(c, 0.5, {}) for c in window
                             if res.rows[c].meta["session"] == other]
    ranked = firsts[:1] + seconds[:1]
    assert ranked_sessions(ranked, res.rows, 2) == [last, other]
    cfg = _cfg(rt.cfg, session_expand=2, session_expand_others=3, session_expand_words=0)
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


def test_words_pick_the_chunks_that_hold_the_question_s_rarest_terms() -> None:
    """``worded_rows``: a term few of the session's chunks hold weighs more than one most
    hold ("commit" in "committed" counts); a chunk holding none of the question's terms
    is never picked."""
    def row(cid: int, text: str) -> ChunkRow:
        return ChunkRow(id=cid, source_id=1, ordinal=cid, kind="turn_pair", heading="",
                        text=text, tokens=len(text.split()), start=0, time=None,
                        meta={"session": "s"}, source="s.jsonl", title="s",
                        source_kind="transcript", source_time=None, project=None)
    rows = [row(1, "the commit was blocked by the hook"),
            row(2, "it was committed"),
            row(3, "lefthook blocked the commit of the prisma files"),
            row(4, "nothing valid here"),
            row(5, "the commit again")]
    terms = ("lefthook", "commit", "prisma", "id")
    assert worded_rows(rows, terms, 1) == {3}
    assert worded_rows(rows, terms, 2) == {3, 1}  # ties: the earlier row
    assert 4 not in worded_rows(rows, terms, 10)  # holds none ("id" is too short to count)
    assert worded_rows(rows, terms, 0) == set()


def test_a_later_session_adds_its_best_worded_chunks_besides_its_closest(
        engine: ContextEngine) -> None:
    """``session_expand_words``: each session after the first adds, besides its
    ``session_expand_others`` closest chunks, those holding the most of the question's
    terms (the answer often shares the question's words, not its meaning)."""
    rt, filters, res, window, order = _synced(engine)
    first, other = order[0], order[1]
    firsts: list[Ranked] = [(c, 1.0, {}) for c in window if res.rows[c].meta["session"] == first]
    seconds: list[Ranked] = [(c, 0.5, {}) for c in window
                             if res.rows[c].meta["session"] == other]
    ranked = firsts[:1] + seconds[:1]
    rest = [r for r in rt.vault.session_chunks([other], rt.cfg.rerank.session_expand_chunks)
            if r.kind in KINDS and r.id not in res.rows]
    worded = worded_rows(rest, res.analysis.terms, 3)
    assert len(worded) == 3
    base = _cfg(rt.cfg, session_expand=2, session_expand_others=3, session_expand_words=0)
    out, added = expand_sessions(rt, base, res, filters, ranked=ranked)
    without = {c for c in _added(res, out, added, rt.cfg.rerank.window)
               if out.rows[c].meta["session"] == other}
    assert not worded <= without  # the closest alone miss some of them
    cfg = _cfg(base, session_expand_words=3)
    out, added = expand_sessions(rt, cfg, res, filters, ranked=ranked)
    got = {c for c in _added(res, out, added, rt.cfg.rerank.window)
           if out.rows[c].meta["session"] == other}
    assert worded <= got and 3 < len(got) <= 6


def test_the_session_lane_expands_the_session_of_the_question_s_rare_words(
        engine: ContextEngine) -> None:
    """``session_expand_lane``: besides the sessions the first rerank ranks best, the
    sessions holding the largest share of the question's rare words are expanded (their
    closest and best-worded chunks), when their share reaches ``session_lane_min``: a
    look-alike session's chunks may outrank the right one's in the window, but only the
    right one uses the question's own words."""
    rt, filters, res, window, order = _synced(engine)
    firsts: list[Ranked] = [(c, 1.0, {}) for c in window
                            if res.rows[c].meta["session"] == order[0]]
    ranked = firsts[:1]
    assert len(order) >= 2
    lone = order[-1]  # not ranked: the lanes' window ranks it last
    shares = {lone: 0.8, order[0]: 0.9}
    cfg = _cfg(rt.cfg, session_expand=1, session_expand_others=5, session_expand_lane=1,
               session_lane_min=0.5)
    out, added = expand_sessions(rt, cfg, res, filters, sessions=shares, ranked=ranked)
    got = {out.rows[c].meta["session"] for c in _added(res, out, added, rt.cfg.rerank.window)}
    assert lone in got
    off = _cfg(cfg, session_expand_lane=0)
    out, added = expand_sessions(rt, off, res, filters, sessions=shares, ranked=ranked)
    assert lone not in {out.rows[c].meta["session"]
                        for c in _added(res, out, added, rt.cfg.rerank.window)}
    low = _cfg(cfg, session_lane_min=0.85)  # its share is under the floor
    out, added = expand_sessions(rt, low, res, filters, sessions=shares, ranked=ranked)
    assert lone not in {out.rows[c].meta["session"]
                        for c in _added(res, out, added, rt.cfg.rerank.window)}
    assert worded_sessions(shares, [order[0]], 1, 0.5) == [lone]
    assert worded_sessions(shares, [], 1, 0.5) == [order[0]]
    assert worded_sessions(None, [], 1, 0.0) == []


def test_a_later_session_s_texts_are_read_for_its_chosen_chunks_only(
        engine: ContextEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session after the first keeps its ``session_expand_others`` closest chunks,
    chosen by their vectors: its rows are read without their texts (and meta) and only
    the chosen ones whole (issue 35: up to 400 rows a session at 500k chunks), and the
    expansion is the same as when every row is read whole."""
    rt, filters, res, window, order = _synced(engine)
    ranked: list[Ranked] = [next((c, 1.0 - i, {}) for c in window
                                 if res.rows[c].meta["session"] == s)
                            for i, s in enumerate(order[:3])]
    cfg = _cfg(rt.cfg, session_expand=3, session_expand_others=3, session_expand_words=0)
    seen: list[str] = []
    conn = rt.vault._conn()
    conn.set_trace_callback(seen.append)
    try:
        out, added = expand_sessions(rt, cfg, res, filters, ranked=ranked)
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in seen if "c.session IN" in s]
    assert len(reads) == len(order[:3]) >= 2
    assert "c.text" in reads[0] and not any("c.text" in s for s in reads[1:])
    # under a filter of kinds (recall's), a later session's rows are read as ids and
    # kinds alone: no column past the text (its overflow pages), no row built (issue 35)
    assert not any("c.time" in s or "c.meta" in s for s in reads[1:])
    new = _added(res, out, added, rt.cfg.rerank.window)
    assert added > 0 and all(out.rows[c] == rt.vault.chunks([c])[c] for c in new)
    assert all(out.rows[c].text for c in new)
    whole = rt.vault.session_chunks

    def always_whole(sessions: list[str], limit: int, **_: object) -> list[ChunkRow]:
        return whole(sessions, limit)

    # the same as testing each row read with Filters.matches (the path of other
    # filters), and as reading every row whole
    monkeypatch.setattr(Filters, "only_kinds", property(lambda self: False))
    assert expand_sessions(rt, cfg, res, filters, ranked=ranked) == (out, added)
    monkeypatch.setattr(rt.vault, "session_chunks", always_whole)
    assert expand_sessions(rt, cfg, res, filters, ranked=ranked) == (out, added)


@pytest.mark.parametrize("limit", [1, 7, 5000])
def test_session_chunk_kinds_are_session_chunks_ids_and_kinds(engine: ContextEngine,
                                                              limit: int) -> None:
    """``Vault.session_chunk_kinds``: ``session_chunks``' rows, order and limit, as (id,
    kind, source kind)."""
    rt, _, _, _, order = _synced(engine)
    sessions = order[:2]
    assert rt.vault.session_chunk_kinds(sessions, limit) == [
        (r.id, r.kind, r.source_kind) for r in rt.vault.session_chunks(sessions, limit)]
    assert rt.vault.session_chunk_kinds([], limit) == []
