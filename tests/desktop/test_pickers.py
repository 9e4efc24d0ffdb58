"""Issue 33 (21, 22): file pickers open in HOME or the folder last chosen, never in the
working directory; the plaintext export's warning defaults to Cancel."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gui

DESKTOP = Path(__file__).resolve().parents[2] / "desktop"


def _open_dialog_folder(qtbot: Any, pick: Any) -> str:
    """Run ``pick()`` (a real modal file dialog), read the folder it opened in, cancel."""
    from desktop.qt import QApplication, QFileDialog, QTimer

    seen: list[str] = []

    def close() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            QTimer.singleShot(20, close)
            return
        seen.append(str(Path(dialog.directory().absolutePath()).resolve()))
        dialog.reject()
    QTimer.singleShot(20, close)
    pick()
    assert seen
    return seen[0]


def test_pickers_open_at_home_then_where_the_last_choice_was(
        qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop import pickers

    home, cwd, chosen = tmp_path / "home", tmp_path / "cwd", tmp_path / "home" / "papers"
    for folder in (home, cwd, chosen):
        folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(pickers, "_last", [])
    assert _open_dialog_folder(qtbot, lambda: pickers.folder(None, "A folder")) == str(home)
    assert _open_dialog_folder(qtbot, lambda: pickers.open_files(None, "Files")) == str(home)
    pickers.remember(str(chosen / "report.pdf"))  # a file chosen there
    assert _open_dialog_folder(qtbot, lambda: pickers.open_file(None, "A file")) == str(chosen)
    assert _open_dialog_folder(qtbot, lambda: pickers.save_file(None, "Save", "x.txt")) == \
        str(chosen)


def test_every_picker_goes_through_desktop_pickers() -> None:
    direct = [str(p.relative_to(DESKTOP)) for p in DESKTOP.rglob("*.py")
              if p.name not in ("pickers.py", "qt.py")
              and re.search(r"QFileDialog\.get", p.read_text(encoding="utf-8"))]
    assert direct == []


def test_export_as_plaintext_defaults_to_cancel(qtbot: Any, host: Any) -> None:
    from desktop.panels.security import SecurityPanel
    from desktop.qt import QMessageBox

    panel = SecurityPanel(host)
    qtbot.addWidget(panel)
    box, jsonl, md = panel.export_box()
    qtbot.addWidget(box)
    cancel = box.button(QMessageBox.StandardButton.Cancel)
    assert box.defaultButton() is cancel and box.escapeButton() is cancel
    assert not jsonl.isDefault() and not md.isDefault()
