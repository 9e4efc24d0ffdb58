"""The Qt drop lists, checked on the layouts PyInstaller really produces on each system.

Windows and macOS: the file lists of the PySide6-Essentials wheels the release
builds there (tests/fixtures/dist, with their provenance); PyInstaller keeps each
file at its wheel path. Linux: the wheel installed here, and its libraries' real
ELF needs: no plugin that stays may need a Qt library that goes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING, REPO, P

FIXTURES = REPO / "tests" / "fixtures" / "dist"
LAYOUTS = {"win32": FIXTURES / "pyside6-6.11.3-win_amd64.txt",
           "darwin": FIXTURES / "pyside6-6.11.3-macosx_13_0_universal2.txt"}
# What each system's app cannot do without (its platform plugin, its style).
MUST_STAY = {
    "win32": ["PySide6/plugins/platforms/qwindows.dll", "PySide6/Qt6Core.dll",
              "PySide6/Qt6Gui.dll", "PySide6/Qt6Widgets.dll", "PySide6/Qt6Network.dll",
              "PySide6/plugins/styles/qmodernwindowsstyle.dll", "PySide6/QtWidgets.pyd"],
    "darwin": ["PySide6/Qt/plugins/platforms/libqcocoa.dylib",
               "PySide6/Qt/plugins/styles/libqmacstyle.dylib",
               "PySide6/Qt/lib/QtCore.framework/Versions/A/QtCore",
               "PySide6/Qt/lib/QtWidgets.framework/Versions/A/QtWidgets",
               "PySide6/Qt/lib/QtSvgWidgets.framework/Versions/A/QtSvgWidgets",
               "PySide6/QtWidgets.abi3.so"],
}
MUST_GO = {
    "win32": ["PySide6/translations/qtbase_de.qm", "PySide6/plugins/tls/qschannelbackend.dll",
              "PySide6/plugins/imageformats/qjpeg.dll", "PySide6/plugins/iconengines/qsvgicon.dll",
              "PySide6/Qt6Svg.dll", "PySide6/plugins/platforms/qdirect2d.dll"],
    "darwin": ["PySide6/Qt/translations/qtbase_de.qm",
               "PySide6/Qt/plugins/tls/libqsecuretransportbackend.dylib",
               "PySide6/Qt/plugins/imageformats/libqjpeg.dylib",
               "PySide6/Qt/lib/QtSvg.framework/Versions/A/QtSvg"],
}


def _layout(system: str) -> list[str]:
    lines = LAYOUTS[system].read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln and not ln.startswith("#")]


def _linux_layout() -> list[str]:
    import importlib.metadata as md

    try:
        dist = md.distribution("PySide6_Essentials")
    except md.PackageNotFoundError:
        pytest.skip("PySide6 is not installed")
    return [f.as_posix() for f in dist.files or [] if f.as_posix().startswith("PySide6/Qt/")]


@pytest.mark.parametrize("system", ["win32", "darwin"])
def test_every_drop_matches_the_real_layout(system: str) -> None:
    layout = _layout(system)
    assert len(layout) > 300  # the fixture holds the whole collectable layout
    for prefix in P.drop_prefixes(system):
        assert any(path.startswith(prefix) for path in layout), (system, prefix)
    for path in MUST_STAY[system]:
        assert path in layout and P.keep(path, system), path
    for path in MUST_GO[system]:
        assert path in layout and not P.keep(path, system), path
    # the same paths as PyInstaller's TOC spells them on Windows
    assert not P.keep("PySide6\\translations\\qtbase_de.qm", "win32")
    kept_translations = [p for p in layout if "/translations/" in p and P.keep(p, system)]
    assert not kept_translations


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux wheel's layout")
def test_every_linux_drop_matches_the_installed_wheel() -> None:
    layout = _linux_layout()
    for prefix in P.drop_prefixes("linux"):
        assert any(path.startswith(prefix) for path in layout), prefix


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF: Linux only")
def test_no_kept_qt_plugin_needs_a_dropped_qt_library() -> None:
    """The Wayland decoration plugin libadwaita needs libQt6Svg: both stay (or both go)."""
    import importlib.util

    sys.path.insert(0, str(PACKAGING / "linux"))
    import elfinfo

    spec = importlib.util.find_spec("PySide6")
    assert spec and spec.origin
    qt = Path(spec.origin).parent / "Qt"
    libs = {p.name: f"PySide6/Qt/lib/{p.name}" for p in (qt / "lib").glob("lib*.so*")}
    broken = []
    for plugin in sorted((qt / "plugins").rglob("*.so")):
        dest = plugin.relative_to(qt.parent.parent).as_posix()
        if not P.keep(dest, "linux"):
            continue
        for name in elfinfo.read(plugin).needed:
            if name in libs and not P.keep(libs[name], "linux"):
                broken.append(f"{dest} needs {name}")
    assert not broken, broken
    adwaita = "PySide6/Qt/plugins/wayland-decoration-client/libadwaita.so"
    assert P.keep(adwaita, "linux") and P.keep("PySide6/Qt/lib/libQt6Svg.so.6", "linux")
