"""Budget usage panel: the last builds, from this window and from IPC callers, each as a
stacked bar of how its budget was spent per item kind, with the engine's token accuracy.

Builds arrive on the host's ``build_finished`` (the engine's BuildDone: every
build_context, whoever asked). Token accuracy is the engine's own check: every
payload is recounted with cl100k after packing (``engine.metrics()``).
"""

from __future__ import annotations

from typing import Any

from desktop.messages import error_text, kind_name
from desktop.panels.budget_chart import OVERHEAD, BudgetChart, framing_swatch, segments
from desktop.qt import (
    QHBoxLayout,
    QLabel,
    QPalette,
    QPushButton,
    QScrollArea,
    QStyle,
    Qt,
    QTimer,
    QVBoxLayout,
    QWidget,
)
from desktop.widgets import (
    cell,
    fmt_int,
    heading,
    kind_colour,
    kind_group,
    make_table,
    muted,
)
from engine import BuildDone, Histogram, MetricsSnapshot

MAX_BUILDS = 20
ACCURACY = "context_engine.packing.token_accuracy_percent"


class BudgetPanel(QWidget):
    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.builds: list[BuildDone] = []
        self.accuracy: Histogram | None = None
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.accuracy_label = QLabel("")
        self.accuracy_label.setWordWrap(True)
        self.clear = QPushButton("Clear")
        self.clear.clicked.connect(self.clear_builds)
        top = QHBoxLayout()
        top.addWidget(heading(f"Last builds (up to {MAX_BUILDS}, newest first)"))
        top.addStretch(1)
        top.addWidget(self.clear)
        self.chart = BudgetChart()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.chart)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.accuracy_label)
        layout.addWidget(scroll, 3)
        layout.addWidget(heading("Where the tokens went (the builds above)"))
        self.kinds = make_table(["Kind", "Tokens", "Share of tokens sent", "Items"], stretch=0)
        layout.addWidget(self.kinds, 2)
        layout.addWidget(muted("Each bar is one build's budget: coloured parts are the items "
                               "packed, by kind; the hatched part is the payload's headers and "
                               "separators; the empty rest was not needed. Hover a part for "
                               "its tokens."))
        self._metrics_timer = QTimer(self)
        self._metrics_timer.setSingleShot(True)
        self._metrics_timer.setInterval(250)
        self._metrics_timer.timeout.connect(self.refresh_accuracy)
        host.build_finished.connect(self.add_build)
        host.ready.connect(self.refresh_accuracy)
        self._draw()

    def add_build(self, build: BuildDone) -> None:
        self.builds.insert(0, build)
        del self.builds[MAX_BUILDS:]
        self._draw()
        self._metrics_timer.start()  # many builds at once: one metrics read

    def clear_builds(self) -> None:
        self.builds.clear()
        self._draw()

    def refresh_accuracy(self) -> None:
        if getattr(self.host, "engine_ready", False):
            self.host.run(lambda engine: engine.metrics(), success=self._got_metrics,
                          failure=lambda exc: self.accuracy_label.setText(
                              "Token accuracy unavailable: " + error_text(exc)))

    def _got_metrics(self, snap: MetricsSnapshot) -> None:
        self.accuracy = snap.histograms.get(ACCURACY)
        self._draw()

    def totals(self) -> list[tuple[str, int, int]]:
        """(kind, tokens, items) over the builds shown, most tokens first."""
        tokens: dict[str, int] = {}
        items: dict[str, int] = {}
        for build in self.builds:
            for kind, n in segments(build):
                tokens[kind] = tokens.get(kind, 0) + n
            for item in build.items:
                group = kind_group(item.kind)
                items[group] = items.get(group, 0) + 1
        return sorted(((k, n, items.get(k, 0)) for k, n in tokens.items()),
                      key=lambda row: -row[1])

    def _draw_totals(self) -> None:
        rows = self.totals()
        total = sum(n for _, n, _ in rows) or 1
        self.kinds.setRowCount(len(rows))
        for r, (kind, n, count) in enumerate(rows):
            name = cell(kind_name(kind))
            text = self.palette().color(QPalette.ColorRole.Text)
            side = self.kinds.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
            swatch = framing_swatch(side, text) if kind == OVERHEAD else kind_colour(kind)
            name.setData(Qt.ItemDataRole.DecorationRole, swatch)  # as in the chart
            self.kinds.setItem(r, 0, name)
            self.kinds.setItem(r, 1, cell(fmt_int(n), number=n))
            self.kinds.setItem(r, 2, cell(f"{100 * n / total:.1f}%", number=n / total))
            self.kinds.setItem(r, 3, cell("—" if kind == OVERHEAD else fmt_int(count),
                                          number=count))

    def _draw(self) -> None:
        self.chart.set_builds(self.builds)
        self._draw_totals()
        if not self.builds:
            self.summary.setText("No builds yet in this session.")
        else:
            used = [b.total_tokens / max(1, b.budget) for b in self.builds]
            ipc = sum(1 for b in self.builds if b.origin != "gui")
            over = sum(1 for u in used if u > 1.0)
            self.summary.setText(
                f"{len(self.builds)} builds ({len(self.builds) - ipc} from this window, "
                f"{ipc} from IPC callers) · mean use {100 * sum(used) / len(used):.0f}% of "
                f"budget · {over} over budget")
        acc = self.accuracy
        if acc is not None and acc.count:
            self.accuracy_label.setText(
                f"Token accuracy (each payload recounted with cl100k): median "
                f"{acc.p50:.1f}% over the engine's last {acc.count} builds; "
                "100% means the reported total is the exact token count of the text sent.")
        else:
            self.accuracy_label.setText("Token accuracy: no build measured yet.")
