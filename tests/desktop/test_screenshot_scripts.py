"""The screenshot scripts answer --help (issue 33 review): ``app_screenshots.py --help``
took ``--help`` for its output folder, made a folder of that name and rendered into it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gui
REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ["screenshots.py", "key_screenshots.py", "app_screenshots.py",
           "tray_screenshots.py"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_says_how_and_writes_nothing(script: str, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / script), "--help"],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "QT_QPA_PLATFORM": "offscreen", "HOME": str(cwd)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:300]
    assert list(cwd.iterdir()) == []  # no folder named --help, no PNG
