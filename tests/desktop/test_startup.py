"""Before Qt starts: no display is a clear message (not Qt's abort), and no locale warning."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.startup import display_problem, prefer_utf8_locale

REPO = Path(__file__).resolve().parents[2]
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland: Linux")


@pytest.fixture
def listening() -> Iterator[Path]:
    """A real listening AF_UNIX socket, as a compositor's is (short path: ~100 bytes max)."""
    folder = Path(tempfile.mkdtemp(prefix="ctxwl-"))
    path = folder / "wayland-9"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    try:
        yield path
    finally:
        server.close()
        path.unlink(missing_ok=True)
        folder.rmdir()


@LINUX
def test_display_problems(listening: Path) -> None:
    assert "unset" in (display_problem({}, "linux") or "")
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({}, "darwin") is None and display_problem({}, "win32") is None
    # a display that is named but answers nowhere is as good as none
    stale = display_problem({"DISPLAY": ":4987", "WAYLAND_DISPLAY": "gone"}, "linux")
    assert stale and "':4987'" in stale and "'gone'" in stale
    # a Wayland socket that accepts connections is a display, by name or by path
    runtime = {"XDG_RUNTIME_DIR": str(listening.parent)}
    assert display_problem({**runtime, "WAYLAND_DISPLAY": listening.name}, "linux") is None
    assert display_problem({"WAYLAND_DISPLAY": str(listening)}, "linux") is None
    assert display_problem({"WAYLAND_DISPLAY": listening.name}, "linux")  # no runtime dir
    assert display_problem({"DISPLAY": "nonsense"}, "linux")


@LINUX
def test_the_app_without_a_display_says_so_and_exits_cleanly(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "PYTHONPATH": str(REPO), "CTX_HOME": str(tmp_path / "data"),
           "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"]}
    for extra in ({}, {"DISPLAY": ":4987"}):
        proc = subprocess.run([sys.executable, "-m", "desktop.app"], env={**env, **extra},
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 1, (proc.returncode, proc.stderr)  # not Qt's abort (134)
        assert "no display" in proc.stderr and "ctx serve" in proc.stderr
        assert "xcb" not in proc.stderr.lower()


LOCALE_PROBE = """
import sys
if sys.argv[1] == "fix":
    from desktop.startup import prefer_utf8_locale
    print(prefer_utf8_locale())
from PySide6.QtCore import QCoreApplication
app = QCoreApplication([])
"""


@LINUX
def test_qt_finds_a_utf8_locale_and_says_nothing() -> None:
    # The bundled app runs without Python's own C-locale coercion: switch it off here too.
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "LANG": "C",
           "PYTHONCOERCECLOCALE": "0", "QT_QPA_PLATFORM": "offscreen"}
    runs = {}
    for mode in ("plain", "fix"):
        runs[mode] = subprocess.run([sys.executable, "-X", "utf8=0", "-c", LOCALE_PROBE, mode],
                                    env=env, capture_output=True, text=True, timeout=120,
                                    check=True)
    assert "Detected locale" in runs["plain"].stderr  # what Qt says on its own
    assert "Detected locale" not in runs["fix"].stderr
    assert "UTF-8" in runs["fix"].stdout or "utf8" in runs["fix"].stdout


@LINUX
def test_utf8_locale_is_left_alone_and_lc_all_is_where_it_goes() -> None:
    env = {"LANG": "C.UTF-8"}
    assert prefer_utf8_locale(env) is None and env == {"LANG": "C.UTF-8"}
    env = {"LC_ALL": "C"}
    chosen = prefer_utf8_locale(env)
    assert chosen and env["LC_ALL"] == chosen and "LC_CTYPE" not in env
