"""What a budgeted recall's excerpts leave of the budget goes to the hits that were cut
(``recall.budget_fill``, issue 31 item 5: the agent's view used about 1,550 of its 2,000
tokens while its excerpts cut answers), never past the budget and with the same ranking."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.api import RecallResult
from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.hits import HIT_OVERHEAD, OMITTED_NOTE, _filled
from engine.recall.config import RecallConfig
from ipc.mcp.compact import recall_text
from tests.conftest import shared_data

QUERIES = ("why did the commit fail", "tests failed", "which command ran the linter")


@pytest.fixture
def synced(engine: ContextEngine) -> ContextEngine:
    engine.sync([str(shared_data("transcripts"))])
    return engine


def _recall(engine: ContextEngine, fill: str, query: str, budget: int) -> RecallResult:
    cfg = engine.rt.cfg
    engine.rt.cfg = dataclasses.replace(
        cfg, recall=dataclasses.replace(cfg.recall, budget_fill=fill))
    try:
        return engine.recall(query, k=8, budget=budget)
    finally:
        engine.rt.cfg = cfg


def _shown(engine: ContextEngine, result: RecallResult) -> int:
    count = engine.rt.counter.count
    return sum(count(h.line) + count(h.excerpt) + HIT_OVERHEAD for h in result.hits or ()) \
        + (OMITTED_NOTE if result.omitted and result.hits else 0)


@pytest.mark.parametrize("fill", ["best", "even"])
def test_the_unused_budget_goes_to_the_cut_excerpts(synced: ContextEngine, fill: str) -> None:
    count = synced.rt.counter.count
    grew = 0
    for query in QUERIES:
        for budget in (700, 1200, 2000):
            plain = _recall(synced, "none", query, budget)
            got = _recall(synced, fill, query, budget)
            hits, before = got.hits or (), plain.hits or ()
            # the same hits in the same order: only how much of each is shown changes
            assert [h.chunk_id for h in hits] == [h.chunk_id for h in before]
            assert got.total_tokens == _shown(synced, got) <= budget
            assert count(recall_text(got, budget)) <= budget  # what MCP answers
            assert got.total_tokens >= plain.total_tokens
            grew += got.total_tokens > plain.total_tokens
            if fill == "best":  # the best-ranked cut hit is the first to get more
                first = next((i for i, h in enumerate(before) if h.excerpt != h.text), None)
                if first is not None:
                    assert count(hits[first].excerpt) >= count(before[first].excerpt)
    assert grew >= 3  # the shared sessions' views did leave tokens unused


@pytest.mark.parametrize("fill", ["best", "even"])
def test_the_budget_holds_at_every_size(synced: ContextEngine, fill: str) -> None:
    count = synced.rt.counter.count
    for budget in range(60, 3000, 173):
        got = _recall(synced, fill, QUERIES[0], budget)
        assert got.total_tokens == _shown(synced, got) <= budget, budget
        assert count(recall_text(got, budget)) <= budget, budget


def test_an_unknown_fill_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        RecallConfig(budget_fill="most")
    assert err.value.details["key"] == "recall.budget_fill"


class _Words:
    """Counts words: a stand-in for the token counter in the fill's own arithmetic."""

    @staticmethod
    def count(text: str) -> int:
        return len(text.split())


def _renderer(sizes: Sequence[int], session: Sequence[int], echo: int
              ) -> Callable[[Sequence[int]], list[tuple[str, bool]]]:
    """Hit i shows min(its allotment, its size) words; a hit shown longer makes each
    later hit of its session show ``echo`` words more (within its allotment): what a
    changed repeat drop can do."""
    def render(allot: Sequence[int]) -> list[tuple[str, bool]]:
        out = []
        for i, n in enumerate(allot):
            extra = sum(echo for j in range(i) if session[j] == session[i]
                        and allot[j] > sizes[j] // 2)
            k = min(n, sizes[i] + extra)
            out.append((" ".join(["w"] * k), k == sizes[i] + extra))
        return out
    return render


@given(st.lists(st.tuples(st.integers(1, 400), st.integers(0, 2)), min_size=1, max_size=8),
       st.integers(0, 60), st.integers(8, 3000), st.sampled_from(["best", "even"]))
def test_the_fill_never_passes_the_room(hits: list[tuple[int, int]], echo: int, room: int,
                                        fill: str) -> None:
    sizes, session = [s for s, _ in hits], [t for _, t in hits]
    tokens = [room // len(hits)] * len(hits)
    render = _renderer(sizes, session, echo)
    first = render(tokens)
    got = _filled(_Words.count, first, tokens, room, render, fill)
    assert sum(_Words.count(c) for c, _ in got) <= room
    assert sum(_Words.count(c) for c, _ in got) >= sum(_Words.count(c) for c, _ in first)


def test_a_later_hit_that_takes_more_is_given_back() -> None:
    """Hit 0 grown makes hit 1 (its session) show more than it did within its own
    allotment: hit 0's growth is cut back so that the two together stay in the room."""
    render = _renderer([300, 100], [0, 0], echo=40)
    tokens = [100, 200]  # hit 1 shows its 100 (140 once hit 0 is long)
    first = render(tokens)
    assert [len(c.split()) for c, _ in first] == [100, 100]
    got = _filled(_Words.count, first, tokens, 350, render, "best")
    assert [len(c.split()) for c, _ in got] == [210, 140]  # 250 asked, 40 given back
