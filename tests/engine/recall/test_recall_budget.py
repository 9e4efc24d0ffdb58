"""A recall query asked within a token budget: the engine sizes the hits' excerpts to
fill it, never past it, and leaves out the hits that would not fit (issue 26: what the
agent sees)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.api import RecallResult
from engine.facade import ContextEngine
from engine.flows.recall_hits import HIT_OVERHEAD, MIN_EXCERPT, excerpt_shares
from tests.conftest import shared_data

QUERY = "why did the commit fail"


def test_equal_shares_of_what_the_lines_leave() -> None:
    # 1000 - 3 * (20 + 8) = 916 left: 305 each, the last takes the token left over
    assert excerpt_shares([900, 900, 900], [20, 20, 20], 1000) == [305, 305, 306]


def test_a_short_hit_gives_the_rest_of_its_share_to_the_others() -> None:
    assert excerpt_shares([900, 50, 900], [20, 20, 20], 1000) == [433, 50, 433]
    assert excerpt_shares([10, 20, 30], [5, 5, 5], 1000) == [10, 20, 30]  # all whole


def test_hits_that_would_get_too_little_are_left_out() -> None:
    lines = [30] * 5
    got = excerpt_shares([400] * 5, lines, 150)  # 150 - 2 * 38 = 74: two hits of 37
    assert got == [37, 37]
    assert excerpt_shares([400] * 5, lines, 30 + HIT_OVERHEAD + MIN_EXCERPT - 1) == []
    assert excerpt_shares([400] * 5, lines, 0) == []
    assert excerpt_shares([], [], 500) == []


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 80)), max_size=12),
       st.integers(0, 6000))
def test_the_shares_never_pass_the_budget(hits: list[tuple[int, int]], budget: int) -> None:
    sizes, lines = [s for s, _ in hits], [n for _, n in hits]
    got = excerpt_shares(sizes, lines, budget)
    n = len(got)
    assert sum(lines[:n]) + HIT_OVERHEAD * n + sum(got) <= budget
    assert all(0 <= g <= s for g, s in zip(got, sizes, strict=False))
    if n < len(hits):  # one more hit would not have had MIN_EXCERPT each
        room = budget - sum(lines[:n + 1]) - HIT_OVERHEAD * (n + 1)
        assert room < MIN_EXCERPT * (n + 1)


@pytest.fixture
def synced(engine: ContextEngine) -> ContextEngine:
    engine.sync([str(shared_data("transcripts"))])
    return engine


def _shown(engine: ContextEngine, result: RecallResult) -> int:
    count = engine.rt.counter.count
    return sum(count(h.line) + count(h.excerpt) + HIT_OVERHEAD for h in result.hits or ())


def test_a_budget_is_filled_never_passed(synced: ContextEngine) -> None:
    plain = synced.recall(QUERY, k=8)
    assert len(plain.hits or ()) == 8
    cap = synced.rt.cfg.recall.hit_excerpt_tokens
    assert all(synced.rt.counter.count(h.excerpt) <= cap for h in plain.hits or ())
    assert "budget" not in plain.to_dict() and "total_tokens" not in plain.to_dict()
    for budget in (150, 700, 2000, 8000):
        got = synced.recall(QUERY, k=8, budget=budget)
        hits = got.hits or ()
        assert hits, budget
        assert got.budget == budget and got.total_tokens == _shown(synced, got) <= budget
        # the same ranking: the budget only decides how much of each hit is shown
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in plain.hits or ()][:len(hits)]
        wire = got.to_dict()
        assert wire["budget"] == budget and wire["total_tokens"] == got.total_tokens
        assert RecallResult.from_dict(wire) == got
    assert len(synced.recall(QUERY, k=8, budget=150).hits or ()) < 8  # the rest left out
    roomy = synced.recall(QUERY, k=8, budget=8000).hits or ()
    assert all(h.excerpt == h.text for h in roomy)  # every chunk whole
    assert any(synced.rt.counter.count(h.excerpt) > cap for h in roomy)
    assert synced.recall(QUERY, k=8, budget=0).hits == ()


def test_a_turn_hit_shows_its_turn_when_the_budget_allows(synced: ContextEngine) -> None:
    cfg = synced.rt.cfg
    synced.rt.cfg = dataclasses.replace(cfg, recall=dataclasses.replace(cfg.recall,
                                                                        hit_unit="turn"))
    roomy = synced.recall(QUERY, k=4, budget=8000)
    assert roomy.hits and all(h.excerpt == h.text for h in roomy.hits)
    tight = synced.recall(QUERY, k=4, budget=400)
    assert tight.hits and tight.total_tokens <= 400
    assert any(h.excerpt != h.text for h in tight.hits)
