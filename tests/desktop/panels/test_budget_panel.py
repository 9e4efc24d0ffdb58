"""Budget usage panel: builds from this window and from an IPC caller, drawn as bars."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import BuildDone, BuildItem
from tests.desktop.cells import cell
from tests.desktop.panels.conftest import ingest

pytestmark = pytest.mark.gui


@pytest.fixture
def served_host(qtbot: Any) -> Iterator[Any]:
    """A host that also serves IPC, as the app does."""
    from desktop.host import EngineHost

    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=True)
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.start()
    yield host
    host.shutdown(wait=True)


def test_gui_and_ipc_builds_are_charted(qtbot: Any, served_host: Any, docs: Path) -> None:
    from desktop.panels.budget import BudgetPanel
    from ipc.remote import RemoteEngine

    host = served_host
    ingest(qtbot, host, [str(docs)])
    panel = BudgetPanel(host)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    with qtbot.waitSignal(host.build_finished, timeout=60_000):
        host.run(lambda e: e.build_context("inverter batteries", budget=300))

    def sibling() -> Any:  # a caller over ZeroMQ, off the GUI thread
        remote = RemoteEngine.connect(host.data_dir)
        assert remote is not None
        with remote:
            return remote.build_context("key rotation", budget=120)

    with qtbot.waitSignal(host.build_finished, timeout=60_000) as sig:
        host.tasks.run(sibling)
    assert sig.args[0].origin == "ipc"
    assert [b.origin for b in panel.builds] == ["ipc", "gui"]
    assert "1 from this window, 1 from IPC callers" in panel.summary.text()
    qtbot.waitUntil(lambda: "median 100.0%" in panel.accuracy_label.text(), timeout=30_000)
    # the chart draws a segment per kind: hovering the first bar's start names it
    from desktop.panels.budget_chart import LEFT, LEGEND_H, ROW_H

    image = panel.grab().toImage()  # paints the chart (no window needed offscreen)
    assert not image.isNull()
    tip = panel.chart.segment_at(LEFT + 2, LEGEND_H + 8 + ROW_H / 2 - 2)
    assert tip is not None and "tokens" in tip and "% of the budget" in tip


def _build(*, budget: int, total_tokens: int, items: list[tuple[str, int]],
           time: float = 0.0) -> BuildDone:
    return BuildDone(origin="ipc", time=time, duration_ms=1.0, budget=budget,
                     total_tokens=total_tokens, timings={},
                     items=tuple(BuildItem(k, "s", n, 0.5, {}) for k, n in items))


def test_segments_account_for_every_token() -> None:
    from desktop.panels.budget_chart import segments

    build = _build(budget=500, total_tokens=130, items=[("section", 50), ("live:selection", 20),
                                                        ("section", 30), ("surrogate", 10)])
    assert segments(build) == [("section", 80), ("surrogate", 10), ("live", 20),
                               ("framing", 20)]
    assert sum(t for _, t in segments(build)) == build.total_tokens


def test_only_the_last_builds_are_kept(qtbot: Any, panel_host: Any) -> None:
    from desktop.panels.budget import MAX_BUILDS, BudgetPanel

    panel = BudgetPanel(panel_host)
    qtbot.addWidget(panel)
    for i in range(MAX_BUILDS + 5):
        panel.add_build(_build(time=i, budget=100, total_tokens=i, items=[("code", i)]))
    assert len(panel.builds) == MAX_BUILDS and panel.builds[0].time == MAX_BUILDS + 4
    panel.clear.click()
    assert panel.builds == [] and "No builds" in panel.summary.text()


def test_one_name_for_each_kind_in_chart_and_table(qtbot: Any, panel_host: Any) -> None:
    """Issue 33 (20): the legend said "framing" (hatched), the table "headers and
    separators" (grey): one name, one swatch, in words."""
    from desktop.panels.budget import BudgetPanel

    panel = BudgetPanel(panel_host)
    qtbot.addWidget(panel)
    panel.add_build(_build(budget=500, total_tokens=130,
                           items=[("section", 50), ("turn_pair", 40), ("code", 20)]))
    legend = dict(panel.chart.legend())
    table = {cell(panel.kinds, r, 0).text() for r in range(panel.kinds.rowCount())}
    assert set(legend.values()) == table
    assert "Headers and separators" in table and "framing" not in table
    assert not any("_" in name or name[:1].islower() for name in table)
    framing_row = next(r for r in range(panel.kinds.rowCount())
                       if cell(panel.kinds, r, 0).text() == "Headers and separators")
    from desktop.qt import Qt

    swatch = cell(panel.kinds, framing_row, 0).data(Qt.ItemDataRole.DecorationRole)
    assert hasattr(swatch, "toImage")  # the hatched swatch of the chart, not a plain grey
