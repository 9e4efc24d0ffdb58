"""Sources panel against a real host: listing, filter, delete with confirmation, re-ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.desktop.panels.conftest import ingest

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot: Any, panel_host: Any, docs: Path) -> Any:
    from desktop.panels.sources import SourcesPanel

    ingest(qtbot, panel_host, [str(docs)])
    answers: list[bool] = []
    widget = SourcesPanel(panel_host, confirm=lambda title, text: answers.pop(0))
    widget.answers = answers
    qtbot.addWidget(widget)
    qtbot.waitUntil(lambda: widget.table.rowCount() == 3, timeout=30_000)
    return widget


def test_lists_every_source_with_kind_chunks_tokens(panel: Any, docs: Path) -> None:
    rows = {panel.table.item(r, 5).text(): r for r in range(panel.table.rowCount())}
    assert set(rows) == {str(docs / n) for n in ("solar.md", "keys.md", "wire.py")}
    r = rows[str(docs / "wire.py")]
    assert panel.table.item(r, 1).text() == "code"
    assert int(panel.table.item(r, 2).text()) >= 1 and int(panel.table.item(r, 3).text()) > 0
    assert panel.table.item(r, 4).text() != "—"
    assert panel.count.text() == "3"


def test_filter_narrows_the_list(qtbot: Any, panel: Any) -> None:
    panel.filter.setText("key")
    assert panel.table.rowCount() == 1 and panel.count.text() == "1 of 3"
    panel.filter.setText("document")
    assert panel.table.rowCount() == 2
    panel.filter.setText("nothing-matches-this")
    assert panel.table.rowCount() == 0
    panel.filter.clear()
    assert panel.table.rowCount() == 3


def test_delete_asks_first_and_a_no_keeps_everything(qtbot: Any, panel: Any,
                                                     panel_host: Any, docs: Path) -> None:
    panel.filter.setText("keys")
    panel.table.selectRow(0)
    assert panel.delete.isEnabled()
    panel.answers.append(False)
    panel.delete.click()
    assert panel.answers == [] and len(panel.sources) == 3
    panel.answers.append(True)
    with qtbot.waitSignal(panel_host.sources_changed, timeout=30_000):
        panel.delete.click()
    qtbot.waitUntil(lambda: len(panel.sources) == 2 and panel.banner.kind == "ok",
                    timeout=30_000)
    assert str(docs / "keys.md") not in [s.uri for s in panel.sources]
    assert (docs / "keys.md").exists()  # the file on disk is untouched


def test_reingest_reads_the_changed_file(qtbot: Any, panel: Any, panel_host: Any,
                                         docs: Path) -> None:
    before = next(s for s in panel.sources if s.uri == str(docs / "solar.md"))
    (docs / "solar.md").write_text("# Solar\n\n" + "Inverters and more inverters. " * 60,
                                   encoding="utf-8")
    panel.select_id(before.id)
    assert panel.reingest.isEnabled()
    finished: list[dict[str, Any]] = []
    panel_host.job_progress.connect(
        lambda j: finished.append(j) if j.state == "done" else None)
    panel.reingest.click()
    qtbot.waitUntil(lambda: bool(finished), timeout=60_000)
    qtbot.waitUntil(lambda: any(s.uri == before.uri and s.tokens != before.tokens
                                for s in panel.sources), timeout=30_000)


def test_text_sources_cannot_be_reingested(qtbot: Any, panel_host: Any) -> None:
    from desktop.panels.sources import SourcesPanel

    done: list[str] = []
    panel_host.run(lambda e: e.ingest(text="a pasted note about inverters", title="pasted",
                                      wait=True), success=done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=30_000)
    widget = SourcesPanel(panel_host)
    qtbot.addWidget(widget)
    qtbot.waitUntil(lambda: widget.table.rowCount() == 1, timeout=30_000)
    widget.table.selectRow(0)
    assert widget.delete.isEnabled() and not widget.reingest.isEnabled()
