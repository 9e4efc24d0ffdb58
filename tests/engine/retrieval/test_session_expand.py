"""Session expansion (issue 26): the best-fused coding sessions' chunks join the window."""

from __future__ import annotations

import dataclasses

from engine.facade import ContextEngine
from engine.flows.search.lanes import run_lanes
from engine.flows.search.session_expand import expand_sessions
from engine.store.vault.rows import Filters
from tests.conftest import shared_data


def test_the_best_sessions_join_the_window_whole(engine: ContextEngine) -> None:
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=("turn_pair", "tool"))
    res = run_lanes(rt, "lefthook blocked the commit of the prisma files", filters=filters)
    out, added = expand_sessions(rt, rt.cfg, res, filters)
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
    fewer, n = expand_sessions(rt, one, res, filters)
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
