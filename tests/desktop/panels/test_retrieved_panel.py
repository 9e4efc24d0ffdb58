"""Retrieved items panel against a real host: ranked items, preview, exact payload, copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import BuildDone, PayloadItem
from tests.desktop.panels.conftest import ingest

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot: Any, panel_host: Any, docs: Path) -> Any:
    from desktop.panels.retrieved import RetrievedPanel

    ingest(qtbot, panel_host, [str(docs)])
    widget = RetrievedPanel(panel_host)
    qtbot.addWidget(widget)
    return widget


def _build(qtbot: Any, panel: Any, panel_host: Any) -> BuildDone:
    with qtbot.waitSignal(panel_host.build_finished, timeout=60_000) as sig:
        panel.go.click()
    qtbot.waitUntil(lambda: panel.go.isEnabled(), timeout=30_000)
    done = sig.args[0]
    assert isinstance(done, BuildDone)
    return done


def test_build_shows_ranked_items_preview_and_exact_payload(qtbot: Any, panel: Any,
                                                            panel_host: Any) -> None:
    from engine import TokenCounter

    panel.query.setText("inverter batteries")
    panel.budget.setValue(400)
    report = _build(qtbot, panel, panel_host)
    assert report.origin == "gui" and report.budget == 400
    assert panel.rows() == len(panel.items) >= 1
    assert panel.text(0, 5) in ("Section", "Code")
    assert "#1" in panel.text(0, 6)  # lanes with their ranks
    context = panel.payload_text.toPlainText()
    total = TokenCounter.shared().count(context)
    assert total == panel.payload.total_tokens <= 400
    assert f"{total} of 400 tokens (exact" in panel.tokens.text()
    # the selected item's own block, not the whole payload
    block = panel.blocks[panel.order[0]]
    assert block and block in context and block != context
    assert block in panel.preview.toPlainText()
    panel.table.selectRow(len(panel.items) - 1)
    assert panel.blocks[panel.order[-1]] in panel.preview.toPlainText()


def test_items_are_listed_best_first_with_a_word_on_why(qtbot: Any, panel: Any,
                                                        panel_host: Any) -> None:
    """Issue 22 (9): rows in score order, why in words, old results gone while building."""
    panel.query.setText("inverter batteries key rotation")
    panel.budget.setValue(1500)
    _build(qtbot, panel, panel_host)
    rows = panel.rows()
    assert rows >= 2
    scores = [float(panel.text(r, 3)) for r in range(rows)]
    assert scores == sorted(scores, reverse=True)
    whys = [panel.text(r, 2) for r in range(rows)]
    assert all(w and "|" not in w and "_" not in w for w in whys)
    assert any(w.startswith("Best match") for w in whys)
    panel.query.setText("lithium")
    panel.go.click()  # the previous results go at once, not left under "Building..."
    assert panel.rows() == 0 and panel.payload_text.toPlainText() == ""
    qtbot.waitUntil(lambda: panel.go.isEnabled(), timeout=30_000)


def test_where_and_why_read_as_words() -> None:
    from dataclasses import replace

    from desktop.panels.retrieved import ranked, where_text, why_text

    item = PayloadItem(kind="section", source="/home/me/notes/tides.md", title="Tides",
                       time=None, tokens=9, score=0.9, lanes={}, why="top_hit_expanded|cut")
    assert why_text(item) == "Best match, with its surroundings; cut to fit"
    assert why_text(replace(item, why="surrogate", tier="gist")) == "Summary (gist)"
    # issue 33 (20): two ranked matches say what sets them apart, not the same words
    one = replace(item, why="snippet", lanes={"keyword": 2, "vector": 5})
    two = replace(item, why="snippet", lanes={"vector": 1})
    assert why_text(one) == "Matched on words and meaning"
    assert why_text(two) == "Matched on meaning"
    # every ranked match passed the reranker: not said on each row ("ranked first by the
    # reranker" was, on every row, the same words again)
    assert why_text(replace(one, why="snippet|rerank")) == "Matched on words and meaning"
    assert where_text(item) == "Tides"
    if "path" in PayloadItem.__dataclass_fields__:  # the engine gives path and lines
        located = replace(item, path="notes/tides.md", root="/home/me", lines=(12, 40))
        assert where_text(located) == "notes/tides.md:12-40"
    low = replace(item, score=0.2)
    assert ranked((low, item, low)) == [1, 0, 2]


def test_dense_cached_mode_and_live_text(qtbot: Any, panel: Any, panel_host: Any) -> None:
    panel.query.setText("inverter")
    panel.mode.setCurrentIndex(panel.mode.findData("dense_cached"))
    panel.live_box.setChecked(True)
    panel.live_kind.setCurrentIndex(panel.live_kind.findData("selection"))
    panel.live_text.setPlainText("selected text mentioning the inverter warranty")
    report = _build(qtbot, panel, panel_host)
    kinds = [i.kind for i in panel.items]
    assert "live:selection" in kinds
    assert "inverter warranty" in panel.payload_text.toPlainText()
    live_index = kinds.index("live:selection")
    live_row = panel.order.index(live_index)
    assert panel.text(live_row, 7) == "—"
    assert panel.text(live_row, 2) == "Live context"
    assert panel.text(live_row, 5) == "Live selection"  # not "live:selection"
    assert "inverter warranty" in panel.blocks[live_index]
    assert [i.kind for i in report.items] == kinds
    tiers = [i.tier for i in panel.items if i.kind == "surrogate"]
    assert tiers and set(tiers) <= {"full", "gist", "micro"}  # as packing chose them


def test_copy_puts_the_exact_payload_on_the_clipboard(qtbot: Any, panel: Any,
                                                      panel_host: Any) -> None:
    from desktop.qt import QGuiApplication

    panel.query.setText("key rotation")
    _build(qtbot, panel, panel_host)
    panel.copy.click()
    assert QGuiApplication.clipboard().text() == panel.payload.context
    assert panel.banner.kind == "ok"


def test_empty_query_is_a_clear_message(qtbot: Any, panel: Any) -> None:
    panel.query.setText("   ")
    panel.go.click()
    qtbot.waitUntil(lambda: panel.banner.kind == "error", timeout=30_000)
    assert "empty" in panel.banner.text_shown().lower()
    assert panel.go.isEnabled() and panel.rows() == 0


def _item(kind: str, title: str) -> PayloadItem:
    return PayloadItem(kind=kind, source="s", title=title, time=None, tokens=1, score=0.5,
                       lanes={}, why="snippet")


def test_blocks_are_split_per_item() -> None:
    from desktop.panels.item_blocks import item_blocks

    context = ("[now · 2026]\n\n=== Live context ===\n[live:selection · ed] sel\nabc\n\n"
               "=== Memory ===\n[code · a.py · t] a.py > f\ndef f(): pass\n\n"
               "[summary:gist · b.md · t] b.md\nGist of b.\n\n"
               "[section · c.md · t]\nTitle left out: it equals the source.\n\n"
               "[section · d.md · t] A very long ti…\nShortened title.\n")
    items = [_item("live:selection", "sel"), _item("code", "a.py > f"),
             _item("surrogate", "b.md"), _item("section", "c.md"),
             _item("section", "A very long title indeed"), _item("section", "missing")]
    assert item_blocks(context, items) == [
        "[live:selection · ed] sel\nabc", "[code · a.py · t] a.py > f\ndef f(): pass",
        "[summary:gist · b.md · t] b.md\nGist of b.",
        "[section · c.md · t]\nTitle left out: it equals the source.",
        "[section · d.md · t] A very long ti…\nShortened title.", ""]


def test_every_column_is_in_sight_without_scrolling(qtbot: Any, panel: Any,
                                                    panel_host: Any) -> None:
    """Issue 22 (9): at the window's size the ranked table needs no horizontal scroll:
    long sources and lanes are capped (whole in their tooltips), Why keeps room."""
    from desktop.panels.retrieved import CAPPED

    panel.resize(1100, 720)
    panel.show()
    qtbot.waitExposed(panel)
    panel.query.setText("inverter batteries and the tide gauge sensor readings")
    panel.mode.setCurrentIndex(panel.mode.findData("dense_cached"))
    _build(qtbot, panel, panel_host)
    table = panel.table
    qtbot.waitUntil(lambda: panel.rows() > 0, timeout=10_000)
    assert table.horizontalScrollBar().maximum() == 0
    assert all(table.columnWidth(c) <= most for c, most in CAPPED.items())
    assert table.columnWidth(2) >= 120  # Why: words, not an ellipsis
    name = panel.text(0, 1).split(":")[0]
    assert name in panel.tip(0, 1)  # the whole path, whatever is cut


def test_why_is_read_whole_at_the_windows_size(qtbot: Any, panel: Any,
                                               panel_host: Any) -> None:
    """Issue 33 (20): Why says what sets a ranked match apart ("Matched on words and
    meaning", "... on meaning"); cut to "Matched on words a..." at the window's size, rows
    that differ read the same. Every row's Why fits its column."""
    panel.resize(1100, 720)
    panel.show()
    qtbot.waitExposed(panel)
    panel.query.setText("inverter batteries and the tide gauge sensor readings")
    _build(qtbot, panel, panel_host)
    qtbot.waitUntil(lambda: panel.rows() > 0, timeout=10_000)
    table = panel.table
    metrics = table.fontMetrics()
    cut = [(panel.text(r, 2), metrics.horizontalAdvance(panel.text(r, 2)), table.columnWidth(2))
           for r in range(panel.rows())
           if metrics.horizontalAdvance(panel.text(r, 2)) + 12 > table.columnWidth(2)]
    assert not cut, cut
    assert table.horizontalScrollBar().maximum() == 0
