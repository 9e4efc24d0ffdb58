"""The Qt binding must not over-release None, True or False (PySide6 6.12.0 does on
CPython 3.11: every void call or emit takes one reference, until the interpreter dies
with "none_dealloc"). constraints.txt pins a version without the bug; this test says
so if an upgrade brings it back."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from desktop.qt import QLabel, QObject, Qt, QTableWidget, QTableWidgetItem, Signal

pytestmark = pytest.mark.gui


class _Emitter(QObject):
    happened = Signal()


def _leak(fn: Callable[[], Any], n: int = 2000) -> dict[str, int]:
    fn()  # first call may cache
    before = {k: sys.getrefcount(v) for k, v in (("None", None), ("True", True),
                                                 ("False", False))}
    for _ in range(n):
        fn()
    return {k: sys.getrefcount(v) - before[k] for k, v in (("None", None), ("True", True),
                                                           ("False", False))}


def test_void_calls_and_emits_keep_singleton_refcounts(qtbot: Any) -> None:
    label = QLabel()
    qtbot.addWidget(label)
    table = QTableWidget(2, 2)
    qtbot.addWidget(table)
    item = QTableWidgetItem("x")
    emitter = _Emitter()
    emitter.happened.connect(lambda: None)
    calls: dict[str, Callable[[], Any]] = {
        "QLabel.setText": lambda: label.setText("x"),
        "QTableWidgetItem.setData": lambda: item.setData(Qt.ItemDataRole.UserRole, 1.0),
        "QTableWidgetItem.data (unset)": lambda: item.data(Qt.ItemDataRole.UserRole + 7),
        "QTableWidget.setItem": lambda: table.setItem(0, 0, QTableWidgetItem("a")),
        "Signal.emit": emitter.happened.emit,
    }
    for name, fn in calls.items():
        leaks = _leak(fn)
        assert all(abs(d) < 50 for d in leaks.values()), (name, leaks)
