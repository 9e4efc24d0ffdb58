"""A recall query asked within a token budget: the engine sizes the hits' excerpts to
fill it, never past it, and leaves out the hits that would not fit (issue 26: what the
agent sees)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.api import RecallResult
from engine.errors import InvalidBudget
from engine.facade import ContextEngine
from engine.flows.recall.hits import (
    HIT_OVERHEAD,
    MIN_EXCERPT,
    OMITTED_NOTE,
    REPEAT_CHARS,
    excerpt_shares,
)
from tests.conftest import shared_data

QUERY = "why did the commit fail"


def test_equal_shares_of_what_the_lines_leave() -> None:
    room = 1000 - 3 * (20 + HIT_OVERHEAD)
    share = room // 3  # the last takes the tokens left over
    assert excerpt_shares([900, 900, 900], [20, 20, 20], 1000) == [share, share,
                                                                    room - 2 * share]


def test_a_short_hit_gives_the_rest_of_its_share_to_the_others() -> None:
    room = 1000 - 3 * (20 + HIT_OVERHEAD)
    rest = (room - 50) // 2
    assert excerpt_shares([900, 50, 900], [20, 20, 20], 1000) == [rest, 50, room - 50 - rest]
    assert excerpt_shares([10, 20, 30], [5, 5, 5], 1000) == [10, 20, 30]  # all whole


def test_hits_that_would_get_too_little_are_left_out() -> None:
    lines = [30] * 5
    budget = 2 * (30 + HIT_OVERHEAD + MIN_EXCERPT) + OMITTED_NOTE  # two, and the note
    assert excerpt_shares([400] * 5, lines, budget) == [MIN_EXCERPT, MIN_EXCERPT]
    # a token less: one hit, which takes all that is left
    left = budget - 1 - (30 + HIT_OVERHEAD) - OMITTED_NOTE
    assert excerpt_shares([400] * 5, lines, budget - 1) == [left]
    one = 30 + HIT_OVERHEAD + MIN_EXCERPT + OMITTED_NOTE
    assert excerpt_shares([400] * 5, lines, one - 1) == []
    assert excerpt_shares([400], [30], one - OMITTED_NOTE) == [MIN_EXCERPT]  # none left out
    assert excerpt_shares([400] * 5, lines, 0) == []
    assert excerpt_shares([], [], 500) == []


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 80)), max_size=12),
       st.integers(0, 6000))
def test_the_shares_never_pass_the_budget(hits: list[tuple[int, int]], budget: int) -> None:
    sizes, lines = [s for s, _ in hits], [n for _, n in hits]
    got = excerpt_shares(sizes, lines, budget)
    n = len(got)
    note = OMITTED_NOTE if 0 < n < len(hits) else 0  # none shown: nothing to note
    assert sum(lines[:n]) + HIT_OVERHEAD * n + sum(got) + note <= budget
    assert all(0 <= g <= s for g, s in zip(got, sizes, strict=False))
    if n < len(hits):  # one more hit would not have had MIN_EXCERPT each
        more = OMITTED_NOTE if n + 1 < len(hits) else 0
        room = budget - sum(lines[:n + 1]) - HIT_OVERHEAD * (n + 1) - more
        assert room < MIN_EXCERPT * (n + 1)


@pytest.fixture
def synced(engine: ContextEngine) -> ContextEngine:
    engine.sync([str(shared_data("transcripts"))])
    return engine


def _shown(engine: ContextEngine, result: RecallResult) -> int:
    count = engine.rt.counter.count
    return sum(count(h.line) + count(h.excerpt) + HIT_OVERHEAD for h in result.hits or ()) \
        + (OMITTED_NOTE if result.omitted and result.hits else 0)


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
    tight = synced.recall(QUERY, k=8, budget=150)
    assert tight.hits and tight.omitted == 8 - len(tight.hits) > 0  # the rest left out, said
    assert tight.to_dict()["omitted"] == tight.omitted
    assert synced.recall(QUERY, k=8, budget=700).total_tokens >= 0.8 * 700  # filled
    roomy = synced.recall(QUERY, k=8, budget=8000).hits or ()
    assert roomy[0].excerpt == roomy[0].text  # the first hit whole (later ones less what
    # an earlier one shows)
    assert any(synced.rt.counter.count(h.excerpt) > cap for h in roomy)
    with pytest.raises(InvalidBudget):  # one rule: a budget is 1..200000 (docs/wire.md)
        synced.recall(QUERY, k=8, budget=0)


def test_a_turn_hit_shows_its_turn_when_the_budget_allows(synced: ContextEngine) -> None:
    cfg = synced.rt.cfg
    synced.rt.cfg = dataclasses.replace(cfg, recall=dataclasses.replace(cfg.recall,
                                                                        hit_unit="turn"))
    roomy = synced.recall(QUERY, k=4, budget=8000)
    assert roomy.hits and roomy.hits[0].excerpt == roomy.hits[0].text  # the turn, whole
    for h in roomy.hits:  # later ones less the lines an earlier one shows
        assert set(h.excerpt.split("\n")) <= set(h.text.split("\n"))
    tight = synced.recall(QUERY, k=4, budget=400)
    assert tight.hits and tight.total_tokens <= 400
    assert any(h.excerpt != h.text for h in tight.hits)


def test_a_line_one_hit_shows_is_not_shown_again(synced: ContextEngine) -> None:
    """Chunks of one turn quote its request, and a tool call repeats the words of the
    reply before it (on one line): such words, once shown, are not shown again by a
    later hit of the same session (the same words in another session are that
    session's news; a line shown cut short, ending in "…", still has news in its rest)."""
    plain = synced.recall(QUERY, k=30, budget=100_000)
    hits = plain.hits or ()

    def flat(text: str) -> str:
        return " ".join(text.split())

    def lines(text: str) -> list[str]:
        return [f for ln in text.split("\n")
                if len(f := flat(ln).rstrip("…").rstrip()) >= REPEAT_CHARS]

    repeated = [ln for i, h in enumerate(hits) for ln in lines(h.text)
                if any(ln in flat(o.text) for o in hits[:i]
                       if o.meta.get("session") == h.meta.get("session"))]
    assert repeated  # the shared sessions' hits do repeat lines (requests, intents)
    def whole_words(shown: str, line: str) -> bool:  # as a reader sees it: not app.ts in app.tsx
        return f" {line} " in f" {shown} "

    shown: dict[object, list[str]] = {}
    for h in hits:
        before = shown.setdefault(h.meta.get("session"), [])
        for ln in lines(h.excerpt):
            assert not any(whole_words(b, ln) for b in before), ln
        before.append(flat(h.excerpt))
    assert all(h.excerpt.strip() for h in hits)


def test_a_line_is_not_taken_for_a_part_of_a_longer_one() -> None:
    from engine.flows.recall.hits import _unshown

    shown = "Result: File created successfully at: /repo/src/app.tsx\nAssistant: done"
    line = "Result: File created successfully at: /repo/src/app.ts"
    assert line in _unshown(f"{line}\nTool Write: /repo/src/app.ts long enough", shown)
    shown_twice = "User: we add a cache to the parser\nand then run the tests again"
    spread = "parser and then run the tests again soon"  # across two shown excerpts
    assert spread in _unshown(f"{spread}\nanother line that is long enough", shown_twice)
    same = "User: we add a cache to the parser"
    assert same not in _unshown(f"{same}\nanother line that is long enough", shown_twice)
    assert _unshown(f"{same}\nok", shown_twice) == f"{same}\nok"  # nothing long left: all


def test_the_digest_gets_every_hit_whole_for_its_packer(synced: ContextEngine) -> None:
    """recall --auto's packer picks among the hits afterwards: it gets each hit's own
    lines (once=False), since the hit that showed a line first may not be packed."""
    from engine.flows.recall.auto import RECALL_KINDS
    from engine.flows.recall.hits import presented
    from engine.flows.search.ranking import search
    from engine.recall.present import excerpt
    from engine.store.vault.rows import Filters

    found = search(synced.rt, QUERY, 30, expand_session=True,
                   filters=Filters(kinds=RECALL_KINDS))
    once = presented(synced.rt, QUERY, found)
    every = presented(synced.rt, QUERY, found, once=False)
    cap = synced.rt.cfg.recall.hit_excerpt_tokens
    assert [h.excerpt for h in every] == [excerpt(h.text, QUERY, synced.rt.counter, cap)
                                          for h in found]
    assert [h.excerpt for h in once] != [h.excerpt for h in every]  # repeats were dropped
