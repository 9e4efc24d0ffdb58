"""A table model for big lists (Sources, Retrieved): rows filtered and sorted in Python
over precomputed text and keys, cells drawn only for the rows in view.

``QTableWidget`` made one item per cell: a keystroke in the Sources filter replaced
every cell (``setItem`` rows x columns) and ``ResizeToContents`` re-measured whole
columns for each, which froze the app for minutes at a few hundred sources. Here a
filter or a new list is one model reset: the view asks ``data`` only for the cells
it shows, and columns keep their widths (measured once, on a sample of rows).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from desktop.qt import (
    QAbstractItemView,
    QAbstractTableModel,
    QHeaderView,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTableView,
    QWidget,
)

Index = QModelIndex | QPersistentModelIndex
# Rows a column's width is measured on (QHeaderView's resize precision): a sample.
MEASURE_ROWS = 60


@dataclass(frozen=True)
class Column:
    """A column: its header, its text, and optionally its sort key, tooltip and
    whether it is a number (right-aligned)."""

    header: str
    text: Callable[[Any], str]
    key: Callable[[Any], Any] | None = None
    tip: Callable[[Any], str] | None = None
    number: bool = False


class RowsModel(QAbstractTableModel):
    """Rows of any objects, shown through ``columns``; ``match(row, words)`` filters."""

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable], *,
                 haystack: Callable[[Any], str] | None = None,
                 parent: Any = None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.key = key
        self.haystack = haystack
        self.rows: list[Any] = []  # every row
        self.hay: list[str] = []  # each row's filter text, lower case
        self.shown: list[int] = []  # indexes of ``rows`` in view, in view order
        self.words: list[str] = []
        self.sort_column = -1
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.texts: dict[tuple[int, int], str] = {}  # (row, column) -> text, once made

    # -- what the panel sets -------------------------------------------------------------
    def set_rows(self, rows: Sequence[Any]) -> None:
        self.rows = list(rows)
        self.hay = [self.haystack(r).lower() for r in self.rows] if self.haystack else []
        self.texts = {}
        self._refresh()

    def set_filter(self, text: str) -> None:
        words = text.lower().split()
        if words != self.words:
            self.words = words
            self._refresh()

    def row(self, view_row: int) -> Any:
        return self.rows[self.shown[view_row]]

    def view_row_of(self, key: Hashable) -> int | None:
        for i, r in enumerate(self.shown):
            if self.key(self.rows[r]) == key:
                return i
        return None

    def visible(self) -> list[Any]:
        return [self.rows[i] for i in self.shown]

    def _refresh(self) -> None:
        self.beginResetModel()
        words = self.words
        if words and self.hay:
            shown = [i for i, h in enumerate(self.hay) if all(w in h for w in words)]
        else:
            shown = list(range(len(self.rows)))
        self.shown = self._sorted(shown)
        self.endResetModel()

    def _sorted(self, shown: list[int]) -> list[int]:
        if not 0 <= self.sort_column < len(self.columns):
            return shown
        col = self.columns[self.sort_column]
        key = col.key or col.text
        rows = self.rows
        return sorted(shown, key=lambda i: _sortable(key(rows[i])),
                      reverse=self.sort_order == Qt.SortOrder.DescendingOrder)

    # -- QAbstractTableModel -------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.shown)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal \
                and 0 <= section < len(self.columns):
            return self.columns[section].header
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if r >= len(self.shown) or c >= len(self.columns):
            return None
        col = self.columns[c]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(r, c)
        if role == Qt.ItemDataRole.ToolTipRole and col.tip is not None:
            return col.tip(self.rows[self.shown[r]])
        if role == Qt.ItemDataRole.TextAlignmentRole and col.number:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def text(self, view_row: int, column: int) -> str:
        """The text of a cell in view (made once per row and column)."""
        i = self.shown[view_row]
        cached = self.texts.get((i, column))
        if cached is None:
            cached = self.texts[(i, column)] = self.columns[column].text(self.rows[i])
        return cached

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self.layoutAboutToBeChanged.emit()
        self.shown = self._sorted(self.shown)
        self.layoutChanged.emit()


def _sortable(value: Any) -> tuple[int, Any]:
    """Numbers before text, None first: keys of mixed types never fail to compare."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value).lower())


def make_view(model: RowsModel, parent: QWidget | None = None, *,
              stretch: int | None = None, widths: dict[int, int] | None = None) -> QTableView:
    """A read-only, row-selecting view of ``model``: columns Interactive (the user drags
    them), never ResizeToContents; ``stretch`` takes the width left; ``widths`` start
    widths in px (others are measured on a sample by ``fit_columns``)."""
    view = QTableView(parent)
    view.setModel(model)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.verticalHeader().setVisible(False)
    rows = view.verticalHeader()
    rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    rows.setDefaultSectionSize(view.fontMetrics().height() + 8)
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setResizeContentsPrecision(MEASURE_ROWS)
    if stretch is not None:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    else:
        header.setStretchLastSection(True)
    for column, width in (widths or {}).items():
        header.resizeSection(column, width)
    return view


def fit_columns(view: QTableView, columns: Sequence[int], *, most: dict[int, int] | None = None
                ) -> None:
    """Size ``columns`` to their content, measured on a sample of rows (MEASURE_ROWS),
    each at most ``most[column]`` px: once per new list, never per keystroke."""
    for column in columns:
        view.resizeColumnToContents(column)
        cap = (most or {}).get(column)
        if cap is not None and view.columnWidth(column) > cap:
            view.setColumnWidth(column, cap)


def selected_row(view: QTableView) -> int | None:
    """The view row selected (single selection), or None."""
    sel = view.selectionModel()
    rows = sel.selectedRows() if sel is not None else []
    return rows[0].row() if rows else None
