"""Session expansion (issue 26): the best-fused coding session's chunks join the window."""

from __future__ import annotations

import dataclasses

from engine.facade import ContextEngine
from engine.flows.lanes import run_lanes
from engine.flows.session_expand import expand_sessions
from engine.store.vault import Filters
from tests.conftest import shared_data


def test_the_best_session_joins_the_window_whole(engine: ContextEngine) -> None:
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    filters = Filters(kinds=("turn_pair", "tool"))
    res = run_lanes(rt, "lefthook blocked the commit of the prisma files", filters=filters)
    out, added = expand_sessions(rt, rt.cfg, res, filters)
    assert added > 0
    window = rt.cfg.rerank.window
    new = out.fused[min(window, len(res.fused)):][:added]
    sessions = {out.rows[cid].meta["session"] for cid, _, _ in new}
    assert len(sessions) == 1 and all(score == 0.0 for _, score, _ in new)
    assert all(out.rows[cid].kind in ("turn_pair", "tool") for cid, _, _ in new)
    (session,) = sessions
    stored = [r for r in rt.vault.session_chunks([session], 10_000)
              if r.kind in ("turn_pair", "tool")]
    assert {r.id for r in stored} <= set(out.rows)  # every chunk of it is a candidate
    off = dataclasses.replace(rt.cfg, rerank=dataclasses.replace(rt.cfg.rerank,
                                                                 session_expand=0))
    assert expand_sessions(rt, off, res, filters) == (res, 0)


def test_documents_are_not_expanded(engine: ContextEngine) -> None:
    engine.ingest(text="The cache is invalidated on every write to the store.", title="notes")
    res = run_lanes(engine.rt, "cache invalidation")
    assert expand_sessions(engine.rt, engine.rt.cfg, res, None) == (res, 0)
