"""File pickers that open where the person last chose something, or in their home folder:
never in the folder ctx happened to be started from.

Every file and folder dialog of the app goes through here (a test keeps it so); the
folder last chosen in any of them is where the next one opens, for this run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from desktop.qt import QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

_last: list[str] = []  # the folder of the last choice, this run


def start_folder() -> str:
    """Where a picker opens: the last folder chosen (while it exists), else home."""
    if _last and Path(_last[0]).is_dir():
        return _last[0]
    return str(Path.home())


def remember(path: str) -> None:
    """Keep the folder of ``path`` (``path`` itself when it is one) for the next picker."""
    if not path:
        return
    chosen = Path(path)
    folder = chosen if chosen.is_dir() else chosen.parent
    _last[:] = [str(folder)]


def folder(parent: QWidget | None, title: str) -> str:
    """A folder, or "" when cancelled."""
    chosen = QFileDialog.getExistingDirectory(parent, title, start_folder())
    remember(chosen)
    return chosen


def open_file(parent: QWidget | None, title: str, filters: str = "") -> str:
    chosen, _ = QFileDialog.getOpenFileName(parent, title, start_folder(), filters)
    remember(chosen)
    return chosen


def open_files(parent: QWidget | None, title: str) -> list[str]:
    chosen, _ = QFileDialog.getOpenFileNames(parent, title, start_folder())
    if chosen:
        remember(chosen[0])
    return list(chosen)


def save_file(parent: QWidget | None, title: str, name: str) -> str:
    """A path to write ``name`` to (suggested in the start folder), or ""."""
    chosen, _ = QFileDialog.getSaveFileName(parent, title, str(Path(start_folder()) / name))
    remember(chosen)
    return chosen


def path_row(placeholder: str, choose: Callable[[], str]) -> tuple[QLineEdit, QHBoxLayout]:
    """A path typed in a line edit or chosen with a "Choose…" button beside it (``choose``
    runs one of the pickers above; a choice fills the edit): the edit, and the row of both."""
    edit = QLineEdit()
    edit.setPlaceholderText(placeholder)
    pick = QPushButton("Choose…")

    def chosen() -> None:
        path = choose()
        if path:
            edit.setText(path)

    pick.clicked.connect(chosen)
    row = QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(pick)
    return edit, row
