"""A recall hit as an agent reads it is the engine's to render (``RecallHit.entry``,
``RecallResult.omitted_note``), beside the allowance its budget counts for it
(``HIT_OVERHEAD``, ``OMITTED_NOTE``); MCP joins the engine's entries and renders none of
its own (issue 34: the engine no longer encodes MCP's format in a constant)."""

from __future__ import annotations

import pytest

from engine import LIMITS, RecallHit, RecallResult, TokenCounter
from engine.api.results import HIT_OVERHEAD, OMITTED_NOTE
from ipc.mcp.compact import recall_entries

MOST_HITS = 1000  # recall's k is at most 1000
KINDS = ("turn_pair", "thinking", "code", "tool", "tool_result", "tool_call", "decision")
LINE = "3f2a91 · 2026-11-02 · main · failed, then passed"
EXCERPT = "$ pytest -q tests/test_x.py\n3 failed, 12 passed\nFixed the import of X."


def _hit(kind: str, number: int = 1) -> RecallHit:
    return RecallHit(chunk_id=number, source_id=1, source="transcript:a", title="a",
                     kind=kind, source_kind="transcript", text=EXCERPT, score=1.0,
                     lanes={}, line=LINE, excerpt=EXCERPT)


def test_an_entry_places_the_hit_then_shows_its_excerpt() -> None:
    assert _hit("tool").entry(7) == f"[7] [tool] {LINE}\n{EXCERPT}\n"


@pytest.mark.parametrize("kind", KINDS)
def test_the_allowance_covers_every_entry(kind: str) -> None:
    count = TokenCounter.shared().count
    inner = count(LINE) + count(EXCERPT)
    for number in (1, 9, 10, 99, 100, 999, MOST_HITS):
        # with the line break that joins it to the next entry, as MCP joins them
        joined = count(_hit(kind).entry(number) + "\n") - inner
        assert joined <= HIT_OVERHEAD, (kind, number, joined)


def test_the_note_fits_its_allowance() -> None:
    count = TokenCounter.shared().count
    for omitted, budget in ((1, 50), (6, 2000), (MOST_HITS - 1, LIMITS.max_budget)):
        note = RecallResult(hits=(), budget=budget, omitted=omitted).omitted_note()
        assert str(omitted) in note and str(budget) in note
        assert count("\n" + note) <= OMITTED_NOTE, (omitted, budget)
    assert RecallResult(hits=(), budget=2000).omitted_note() == ""


def test_mcp_reads_the_engines_entries() -> None:
    hits = tuple(_hit(kind, i) for i, kind in enumerate(KINDS, 1))
    result = RecallResult(hits=hits, budget=4000, omitted=3)
    assert recall_entries(result) == ([h.entry(i) for i, h in enumerate(hits, 1)]
                                      + [result.omitted_note()])
