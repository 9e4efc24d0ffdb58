"""The budget chart: one stacked bar per build, how its budget was spent per item kind.

Each row is drawn with QPainter: the bar's full width is the build's budget,
coloured segments are the tokens of each item kind, a grey hatched segment is
the payload's own framing (headers, separators: total minus the items' sum),
and the rest is the unused budget. Hovering a segment names it.
"""

from __future__ import annotations

from typing import Any

from desktop.messages import kind_name
from desktop.qt import (
    QBrush,
    QColor,
    QEvent,
    QPainter,
    QPalette,
    QPen,
    QPixmap,
    QPointF,
    QRectF,
    QSize,
    Qt,
    QWidget,
)
from desktop.widgets import KIND_COLOURS, fmt_int, fmt_ms, fmt_time, kind_group
from engine import BuildDone

ROW_H = 40
BAR_H = 18
LEFT = 132
RIGHT = 210
LEGEND_H = 28
OVERHEAD = "framing"


def segments(build: BuildDone) -> list[tuple[str, int]]:
    """(kind group, tokens) in stacking order, then the framing tokens."""
    sums: dict[str, int] = {}
    for item in build.items:
        group = kind_group(item.kind)
        sums[group] = sums.get(group, 0) + item.tokens
    out = [(k, sums[k]) for k in KIND_COLOURS if sums.get(k)]
    framing = build.total_tokens - sum(sums.values())
    if framing > 0:
        out.append((OVERHEAD, framing))
    return out


class BudgetChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.builds: list[BuildDone] = []
        self._hits: list[tuple[QRectF, str]] = []
        self.setMouseTracking(True)
        self.setMinimumWidth(LEFT + RIGHT + 200)

    def set_builds(self, builds: list[BuildDone]) -> None:
        self.builds = list(builds)
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(760, LEGEND_H + 8 + ROW_H * max(1, len(self.builds)))

    def minimumSizeHint(self) -> QSize:
        return QSize(LEFT + RIGHT + 200, LEGEND_H + 8 + ROW_H * max(1, len(self.builds)))

    def paintEvent(self, event: Any) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        faint = pal.color(QPalette.ColorRole.PlaceholderText)
        base = pal.color(QPalette.ColorRole.Base)
        self._hits = []
        self._legend(painter, text)
        if not self.builds:
            painter.setPen(faint)
            painter.drawText(QRectF(0, LEGEND_H + 8, self.width(), ROW_H),
                             Qt.AlignmentFlag.AlignCenter,
                             "No builds yet: run one in Retrieved items, or call ctx build.")
            painter.end()
            return
        width = max(40.0, self.width() - LEFT - RIGHT)
        fm = painter.fontMetrics()
        for row, build in enumerate(self.builds):
            top = LEGEND_H + 8 + row * ROW_H
            budget = max(1, build.budget)
            total = build.total_tokens
            origin = "this window" if build.origin == "gui" else "IPC caller"
            painter.setPen(text)
            painter.drawText(QRectF(4, top + 2, LEFT - 10, fm.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             fmt_time(build.time, with_date=False))
            painter.setPen(faint)
            painter.drawText(QRectF(4, top + 2 + fm.height(), LEFT - 10, fm.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             origin)
            bar = QRectF(LEFT, top + (ROW_H - BAR_H) / 2 - 2, width, BAR_H)
            painter.fillRect(bar, base)
            x = bar.left()
            for kind, tokens in segments(build):
                w = min(bar.right() - x, width * tokens / budget)
                if w <= 0:
                    continue
                rect = QRectF(x, bar.top(), w, bar.height())
                if kind == OVERHEAD:
                    _framing(painter, rect, text)
                else:
                    painter.fillRect(rect, QColor(KIND_COLOURS[kind]))
                self._hits.append((rect, (f"{kind_name(kind)}: {fmt_int(tokens)} tokens "
                                         f"({100 * tokens / budget:.1f}% of the budget)")))
                x += w
            painter.setPen(QPen(text, 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(bar)
            pct = 100.0 * total / budget
            over = total > budget
            painter.setPen(QColor("#D93025") if over else text)
            label = f"{fmt_int(total)} / {fmt_int(budget)} ({pct:.0f}%)"
            painter.drawText(QRectF(bar.right() + 8, top + 2, RIGHT - 10, fm.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, label)
            painter.setPen(faint)
            detail = f"{len(build.items)} items · {fmt_ms(build.duration_ms)}"
            painter.drawText(QRectF(bar.right() + 8, top + 2 + fm.height(), RIGHT - 10,
                                    fm.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, detail)
        painter.end()

    def legend(self) -> list[tuple[str, str]]:
        """(kind, its name) in the legend's order: the names the table uses too."""
        kinds: list[str] = []
        for build in self.builds:
            for kind, _ in segments(build):
                if kind not in kinds:
                    kinds.append(kind)
        return [(k, kind_name(k)) for k in (*KIND_COLOURS, OVERHEAD) if k in kinds]

    def _legend(self, painter: QPainter, text: QColor) -> None:
        order = [kind for kind, _ in self.legend()]
        fm = painter.fontMetrics()
        x = float(LEFT)
        painter.setPen(text)
        painter.drawText(QRectF(4, 4, LEFT - 10, LEGEND_H - 8),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, "Spent on:")
        for kind in order:
            swatch = QRectF(x, 9, 12, 12)
            if kind == OVERHEAD:
                _framing(painter, swatch, text)
            else:
                painter.fillRect(swatch, QColor(KIND_COLOURS[kind]))
            painter.drawRect(swatch)
            label = kind_name(kind)
            painter.drawText(QRectF(x + 16, 4, fm.horizontalAdvance(label) + 4, LEGEND_H - 8),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, label)
            x += 16 + fm.horizontalAdvance(label) + 16

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            pos = event.pos()  # type: ignore[attr-defined]
            self.setToolTip(self.segment_at(pos.x(), pos.y()) or "")
        return super().event(event)

    def segment_at(self, x: float, y: float) -> str | None:
        """What the segment at (x, y) shows on hover (None off the bars)."""
        for rect, tip in self._hits:
            if rect.contains(QPointF(x, y)):
                return tip
        return None


def framing_swatch(size: int, text: QColor) -> QPixmap:
    """The framing's swatch as the chart draws it (grey, hatched), for the table."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    _framing(painter, QRectF(0, 0, size, size), text)
    painter.end()
    return pixmap


def _framing(painter: QPainter, rect: QRectF, text: QColor) -> None:
    """The payload's framing tokens: grey, hatched in the text colour."""
    painter.fillRect(rect, QColor(128, 128, 128, 90))
    hatch = QColor(text)
    hatch.setAlpha(150)
    painter.fillRect(rect, QBrush(hatch, Qt.BrushStyle.BDiagPattern))
