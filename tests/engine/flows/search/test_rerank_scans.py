"""The rerank's scans (each candidate tokenized) are made once a query and reused only
under the settings they were made with (issue 31: recall's latency)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from engine.facade import ContextEngine
from engine.flows.search.lanes import PreScans, run_lanes
from engine.flows.search.ranking import prescan, rank_hits, rank_query
from engine.retrieval import rerank as rerank_mod
from engine.retrieval import scan as scan_mod
from engine.store.vault.rows import Filters
from tests.conftest import shared_data

QUERY = "lefthook blocked the commit of the prisma files"


def test_a_recall_tokenizes_each_candidate_once(engine: ContextEngine,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall reranks twice (the window, then the window with the best sessions' chunks):
    the second rerank reuses the first's scans, though its config (a wider window) is
    another object. It scanned every window candidate again before."""
    engine.sync([str(shared_data("transcripts"))])
    made: Counter[Any] = Counter()
    real = scan_mod.Scan

    class Counted(real):  # type: ignore[misc, valid-type]
        __slots__ = ()

        def __init__(self, cand: Any, cfg: Any) -> None:
            made[cand.id] += 1
            super().__init__(cand, cfg)

    monkeypatch.setattr(scan_mod, "Scan", Counted)  # scan_all's
    monkeypatch.setattr(rerank_mod, "Scan", Counted)  # rerank's own, for scans not given
    rt = engine.rt
    assert rt.cfg.rerank.session_expand_by == "rerank" and rt.cfg.rerank.session_expand > 0
    _, ranked, _ = rank_query(rt, QUERY, 10, filters=Filters(kinds=("turn_pair", "tool")),
                              expand_session=True)
    window = rt.cfg.rerank.window
    assert len(ranked) > window  # the sessions' chunks joined the window
    assert made and max(made.values()) == 1, [c for c, n in made.items() if n > 1][:5]
    assert len(made) >= window


def test_scans_of_other_settings_are_not_reused(engine: ContextEngine) -> None:
    """Scans made under other stopwords (or scan length) would give other terms: the rank
    is then the one made without them, not one from stale scans."""
    engine.sync([str(shared_data("transcripts"))])
    rt = engine.rt
    res = run_lanes(rt, QUERY, filters=Filters(kinds=("turn_pair", "tool")))
    rows = [res.rows[c] for c, _, _ in res.fused[: rt.cfg.rerank.window]]
    fresh = rank_hits(rt, rt.cfg, res).ranked
    other = dataclasses.replace(rt.cfg.rerank, stopwords=frozenset({"lefthook", "prisma"}),
                                scan_chars=40)
    stale = dataclasses.replace(res, prepared=prescan(rows, other))
    assert rank_hits(rt, rt.cfg, stale).ranked == fresh
    # the same settings in another config object (a widened window): reused, same rank
    wider = dataclasses.replace(rt.cfg.rerank, window=rt.cfg.rerank.window + 1)
    same = dataclasses.replace(res, prepared=PreScans(wider, prescan(rows, wider).scans))
    assert rank_hits(rt, rt.cfg, same).ranked == fresh
    # and stale scans under the config's own settings would change it: the check matters
    assert stale.prepared is not None
    wrong = dataclasses.replace(res, prepared=PreScans(rt.cfg.rerank, stale.prepared.scans))
    assert rank_hits(rt, rt.cfg, wrong).ranked != fresh
