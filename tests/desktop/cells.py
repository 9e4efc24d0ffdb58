"""Reading a Qt table's cells in a test: an empty cell is a failure, not an AttributeError."""

from __future__ import annotations

from desktop.qt import QTableWidget, QTableWidgetItem


def cell(table: QTableWidget, row: int, column: int) -> QTableWidgetItem:
    """The item at ``row``, ``column``; the test fails there if the cell is empty."""
    item = table.item(row, column)
    assert item is not None, (row, column)
    return item
