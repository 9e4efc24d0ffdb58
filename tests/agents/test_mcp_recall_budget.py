"""MCP's recall answer is the engine's budgeted hits, joined: the engine's per-hit
allowance (``HIT_OVERHEAD``, ``OMITTED_NOTE``) covers MCP's rendering, so the joined
entries fit the budget whole (nothing cut by ``fit``) and say how many hits were left
out; with no room for one hit, the answer says so instead of "no results"."""

from __future__ import annotations

import pytest

from engine import ContextEngine, TokenCounter
from ipc.mcp.compact import recall_entries, recall_text
from tests.conftest import shared_data


@pytest.fixture
def synced(engine: ContextEngine) -> ContextEngine:
    engine.sync([str(shared_data("transcripts"))])
    return engine


@pytest.mark.parametrize("query", ["why did the commit fail", "tests failed",
                                   "which command ran the linter"])
def test_the_entries_fit_whole(synced: ContextEngine, query: str) -> None:
    count = TokenCounter.shared().count
    for budget in (120, 200, 350, 700, 1200, 2000, 4000):
        result = synced.recall(query, k=8, budget=budget)
        text = recall_text(result, budget)
        assert count(text) <= budget, (budget, count(text))
        if result.hits:  # what the engine sized is what the agent reads, uncut
            assert text == "\n".join(recall_entries(result)), budget
            assert text.count("] [") >= len(result.hits)
        if result.omitted and result.hits:
            assert text.endswith(f"[{result.omitted} more hits did not fit in {budget} "
                                 "tokens: ask with a larger budget or a smaller k]")


def test_no_room_for_a_hit_is_said(synced: ContextEngine) -> None:
    result = synced.recall("why did the commit fail", k=8, budget=50)
    assert result.hits == () and result.omitted == 8
    assert recall_text(result, 50).startswith("no hit fits in 50 tokens")
    roomy = synced.recall("why did the commit fail", k=3, budget=3000)
    assert max(TokenCounter.shared().count(h.excerpt) for h in roomy.hits or ()) > 160
