"""The macOS signing order (packaging/macos/sign_app.py), on a .app laid out as PyInstaller 6
lays out ctx.app: two executables, binaries in Frameworks with links from Resources, Qt's
frameworks with their Versions/Current links. The files carry real Mach-O headers.
"""

from __future__ import annotations

import os
import plistlib
import struct
import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the fake .app needs symlinks")

sys.path.insert(0, str(PACKAGING / "macos"))
import sign_app

MACHO_64 = b"\xcf\xfa\xed\xfe" + b"\x00" * 28  # little-endian 64-bit (arm64, x86_64)
FAT = b"\xca\xfe\xba\xbe" + struct.pack(">I", 2) + b"\x00" * 24  # universal2, two slices
JAVA_CLASS = b"\xca\xfe\xba\xbe" + struct.pack(">I", 61)  # same magic, a class file


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "ctx.app"
    c = app / "Contents"
    for d in ("MacOS", "Frameworks/PySide6/Qt/lib", "Resources", "Frameworks/numpy/_core"):
        (c / d).mkdir(parents=True)
    (c / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "ctx-app"}))
    (c / "MacOS" / "ctx-app").write_bytes(MACHO_64)
    (c / "MacOS" / "ctx").write_bytes(MACHO_64)
    (c / "Frameworks" / "Python").write_bytes(FAT)
    (c / "Frameworks" / "numpy" / "_core" / "_multiarray_umath.cpython-311-darwin.so"
     ).write_bytes(MACHO_64)
    (c / "Frameworks" / "base_library.zip").write_bytes(b"PK\x03\x04")
    (c / "Frameworks" / "Thing.class").write_bytes(JAVA_CLASS)
    fw = c / "Frameworks" / "PySide6" / "Qt" / "lib" / "QtCore.framework"
    (fw / "Versions" / "A" / "Resources").mkdir(parents=True)
    (fw / "Versions" / "A" / "QtCore").write_bytes(FAT)
    (fw / "Versions" / "A" / "Resources" / "Info.plist").write_bytes(plistlib.dumps({}))
    os.symlink("A", fw / "Versions" / "Current")
    os.symlink("Versions/Current/QtCore", fw / "QtCore")
    os.symlink("Versions/Current/Resources", fw / "Resources")
    # PyInstaller links data-side names to the binaries (and back)
    os.symlink("../Frameworks/Python", c / "Resources" / "Python")
    os.symlink("../Frameworks/numpy", c / "Resources" / "numpy")
    return app


def test_macho_detection(tmp_path: Path) -> None:
    app = _app(tmp_path)
    frameworks = app / "Contents" / "Frameworks"
    assert sign_app.is_macho(frameworks / "Python")  # universal
    assert sign_app.is_macho(app / "Contents" / "MacOS" / "ctx")  # thin
    assert not sign_app.is_macho(frameworks / "Thing.class")  # Java's 0xcafebabe
    assert not sign_app.is_macho(frameworks / "base_library.zip")
    assert not sign_app.is_macho(app / "Contents" / "Resources" / "Python")  # a link


def test_inside_out_without_deep(tmp_path: Path) -> None:
    app = _app(tmp_path)
    ent = tmp_path / "entitlements.plist"
    commands = sign_app.plan(app, "Developer ID Application: X", ent)
    targets = [cmd[-1] for cmd in commands]
    c = app / "Contents"
    fw_version = c / "Frameworks/PySide6/Qt/lib/QtCore.framework/Versions/A"
    expected = {str(c / "Frameworks" / "Python"),
                str(c / "Frameworks/numpy/_core/_multiarray_umath.cpython-311-darwin.so"),
                str(fw_version), str(c / "MacOS" / "ctx"), str(app)}
    assert set(targets) == expected and len(targets) == len(expected)  # each once, no links
    assert targets[-1] == str(app)  # the app seals what is inside, last
    for i, target in enumerate(targets):  # nothing is signed after its container
        for later in targets[i + 1:]:
            assert not Path(later).is_relative_to(Path(target)), (later, target)
    for cmd in commands:
        assert "--deep" not in cmd
        assert cmd[:5] == ["codesign", "--force", "--timestamp", "--options", "runtime"]
        executable = cmd[-1] in (str(app), str(c / "MacOS" / "ctx"))
        assert ("--entitlements" in cmd) == executable, cmd


def test_the_workflow_signs_with_this_script() -> None:
    import yaml

    workflow = yaml.safe_load((PACKAGING.parent / ".github" / "workflows" / "release.yml"
                               ).read_text())
    runs = "\n".join(str(s.get("run", "")) for s in workflow["jobs"]["macos"]["steps"])
    assert "packaging/macos/sign_app.py" in runs and "--deep" not in runs
