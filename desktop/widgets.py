"""Small pieces the panels and dialogs share: formatting, a message banner, tables, kind
colours.

Nothing here talks to the engine or the host; panels and dialogs compose these, and it
imports neither (tests/test_boundaries.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from desktop.appearance import BANNERS, paint_tone
from desktop.messages import REASONS
from desktop.qt import (
    QAbstractItemView,
    QColor,
    QFont,
    QHeaderView,
    QLabel,
    QPalette,
    QSizePolicy,
    Qt,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

# Item kinds of a payload, in the order the budget chart stacks them, with a colour
# each that reads on light and dark backgrounds (Okabe-Ito, colour-blind safe).
KIND_COLOURS: dict[str, str] = {
    "section": "#0072B2", "code": "#009E73", "session_code": "#009E73", "turn": "#E69F00", "turn_pair": "#D55E00",
    "thinking": "#CC79A7", "tool": "#56B4E9", "surrogate": "#8C6BB1", "live": "#F0E442",
    "conversation": "#B07A4F", "other": "#999999",
}



def kind_group(kind: str) -> str:
    """The colour group of an item kind ("live:selection" -> "live")."""
    if kind.startswith("live:"):
        return "live"
    return kind if kind in KIND_COLOURS else "other"


def kind_colour(kind: str) -> QColor:
    return QColor(KIND_COLOURS[kind_group(kind)])


def reason_text(reason: str, detail: str = "") -> str:
    """Why a file is not in the store, in words (the catalogue's, desktop.messages); a
    detail the catalogue knows (a broken link) says it more exactly than the reason."""
    return REASONS.get(detail) or REASONS.get(reason) or (
        reason.replace("_", " ").capitalize() if reason else "Failed")


def fmt_int(n: float | None) -> str:
    return "—" if n is None else f"{int(n):,}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "—"
    if seconds < 1:
        return "<1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:,.0f} ms"


def fmt_time(epoch: float | None, *, with_date: bool = True) -> str:
    if not epoch:
        return "—"
    fmt = "%Y-%m-%d %H:%M" if with_date else "%H:%M:%S"
    return time.strftime(fmt, time.localtime(epoch))


def is_dark(widget: QWidget) -> bool:
    return widget.palette().color(QPalette.ColorRole.Window).lightness() < 128


def monospace() -> QFont:
    font = QFont("monospace")
    font.setStyleHint(QFont.StyleHint.TypeWriter)
    return font


BANNER_STYLES = BANNERS  # (light background, light text, dark background, dark text)


class Banner(QLabel):
    """A message: info, ok or error; colours chosen for the current palette.

    Its place is kept when it is hidden and its height is fixed (two lines, or one
    when ``compact``), so a message that appears or goes never moves the controls
    under the cursor. Text longer than that is cut, whole in the tooltip.
    """

    def __init__(self, parent: QWidget | None = None, *, compact: bool = False) -> None:
        super().__init__(parent)
        self.compact = compact
        self.setWordWrap(not compact)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        policy = self.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)
        self.setSizePolicy(policy)
        lines = 1 if compact else 2
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + (8 if compact else 14))
        self.kind = ""
        self.full_text = ""
        self.hide()

    def show_message(self, kind: str, text: str) -> None:
        self.kind = kind
        self.setProperty("ctxPadding", "2px 8px" if self.compact else "6px 8px")
        paint_tone(self, f"banner:{kind}")  # and again when the palette switches
        self.full_text = text
        self.setToolTip(text)
        self._fit()
        self.show()

    def clear_message(self) -> None:
        self.kind = ""
        paint_tone(self, "")
        self.full_text = ""
        self.setText("")
        self.setToolTip("")
        self.hide()

    def text_shown(self) -> str:
        """The whole message (what ``text()`` shows may be cut to fit)."""
        return self.full_text

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        if self.compact:
            width = max(40, self.width() - 20)
            self.setText(self.fontMetrics().elidedText(self.full_text,
                                                       Qt.TextElideMode.ElideRight, width))
        else:
            self.setText(self.full_text)


def heading(text: str, parent: QWidget | None = None) -> QLabel:
    label = QLabel(text, parent)
    font = label.font()
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 1.1)
    label.setFont(font)
    return label


def muted(text: str, parent: QWidget | None = None) -> QLabel:
    label = QLabel(text, parent)
    label.setWordWrap(True)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def make_table(headers: Sequence[str], parent: QWidget | None = None, *,
               stretch: int | None = None) -> QTableWidget:
    table = QTableWidget(0, len(headers), parent)
    table.setHorizontalHeaderLabels(list(headers))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setAlternatingRowColors(True)
    table.verticalHeader().setVisible(False)
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    if stretch is not None:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    else:
        header.setStretchLastSection(True)
    return table


def cell(text: str, *, number: float | None = None, tip: str = "", data: Any = None
         ) -> QTableWidgetItem:
    """A table cell; ``number`` makes it sort and align as a number."""
    item = _NumberItem(text) if number is not None else QTableWidgetItem(text)
    if number is not None:
        item.setData(Qt.ItemDataRole.UserRole + 1, float(number))
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        item.setToolTip(tip)
    if data is not None:
        item.setData(Qt.ItemDataRole.UserRole, data)
    return item


class _NumberItem(QTableWidgetItem):
    def __lt__(self, other: QTableWidgetItem) -> bool:
        a = self.data(Qt.ItemDataRole.UserRole + 1)
        b = other.data(Qt.ItemDataRole.UserRole + 1)
        if a is None or b is None:
            return super().__lt__(other)
        return float(a) < float(b)
