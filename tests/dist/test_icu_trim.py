"""The bundle's ICU data trim (packaging/linux/icu_trim.py), on the ICU that the
installed PySide6 wheel ships: what is kept, that the trimmed library answers every
ICU call Qt Core makes, that Qt itself runs on it, and that a trim dropping data Qt
needs is refused with the bundle left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING

sys.path.insert(0, str(PACKAGING / "linux"))
import icu_trim

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PySide6 ships its own ICU on Linux only")


def _qt_lib() -> Path:
    import PySide6
    return Path(PySide6.__file__).parent / "Qt" / "lib"


def _needs_tools() -> None:
    lacking = icu_trim.missing_tools()
    if lacking:
        pytest.skip(f"needs {', '.join(lacking)} (scripts/system-deps.sh installs them)")
    if icu_trim.find_library(_qt_lib()) is None:
        pytest.skip("this PySide6 has no private ICU")


def _fake_bundle(tmp_path: Path) -> Path:
    """A folder holding copies of the wheel's three ICU libraries, as the bundle does."""
    lib = tmp_path / "bundle" / "_internal" / "PySide6" / "Qt" / "lib"
    lib.mkdir(parents=True)
    for p in _qt_lib().glob("libicu*.so.*"):
        (lib / p.name).write_bytes(p.read_bytes())
    return tmp_path / "bundle"


def test_keep_rules() -> None:
    assert icu_trim.keep("root.res") and icu_trim.keep("coll/ucadata.icu")
    assert icu_trim.keep("zoneinfo64.res") and icu_trim.keep("cnvalias.icu")
    for dropped in ("de.res", "fr_CA.res", "lang/de.res", "coll/de.res", "zone/ja.res",
                    "brkitr/cjdict.dict", "ibm-943_P15A-2003.cnv", "unames.icu",
                    "translit/root.res", "unit/root.res"):
        assert not icu_trim.keep(dropped), dropped


def test_trimmed_library_answers_what_qt_calls(tmp_path: Path) -> None:
    _needs_tools()
    bundle = _fake_bundle(tmp_path)
    lib = icu_trim.find_library(bundle)
    assert lib is not None
    before = lib.stat().st_size
    report = icu_trim.trim_bundle(bundle)
    after = lib.stat().st_size
    assert after < before / 4, (before, after)
    assert report["bytes_after"] == after
    checks = report["checks"]
    assert isinstance(checks, dict) and len(checks) >= 10
    assert all(v <= 0 for v in checks.values()), checks
    # the library holds only kept items
    work = tmp_path / "dat"
    work.mkdir()
    data = work / "icudt73l.dat"  # icupkg wants the package's own name
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata", str(lib), str(data)],
                   check=True)
    items = subprocess.run(["icupkg", "-l", str(data)], check=True, capture_output=True,
                           text=True).stdout.split()
    assert items and all(icu_trim.keep(i) for i in items)
    assert "coll/ucadata.icu" in items and "zoneinfo64.res" in items


@pytest.mark.parametrize(("dropped", "why"), [
    ({"zoneinfo64.res"}, "fails"),  # ICU then knows no zone: the ucal checks fail
    ({"coll/ucadata.icu"}, "icupkg failed"),  # the root collation needs it: icupkg refuses
])
def test_a_trim_that_drops_needed_data_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  dropped: set[str], why: str) -> None:
    _needs_tools()
    bundle = _fake_bundle(tmp_path)
    lib = icu_trim.find_library(bundle)
    assert lib is not None
    original = lib.read_bytes()
    monkeypatch.setattr(icu_trim, "KEEP_FILES", icu_trim.KEEP_FILES - dropped)
    monkeypatch.setattr(icu_trim, "KEEP_ROOT_RES",
                        icu_trim.KEEP_ROOT_RES - {d[:-4] for d in dropped})
    with pytest.raises(SystemExit, match=why):
        icu_trim.trim_bundle(bundle)
    assert lib.read_bytes() == original


QT_PROBE = r"""
import json, sys
from PySide6.QtCore import QCollator, QLocale, QTimeZone, QByteArray, QStringConverter
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
out = {}
c = QCollator(QLocale("de_DE"))
out["compare"] = c.compare("a", "B")
out["upper"] = QLocale("en_US").toUpper("stra\u00dfe")
tz = QTimeZone(QByteArray(b"Europe/Paris"))
out["tz_valid"] = tz.isValid()
out["tz_name"] = tz.displayName(QTimeZone.TimeType.StandardTime)
label = QLabel("ctx \u00e9\u00e8 \u4e2d\u6587")
label.show()
app.processEvents()
out["label_width"] = label.sizeHint().width()
out["icudata"] = [line.split()[-1] for line in open("/proc/self/maps")
                  if "libicudata" in line][:1]
print(json.dumps(out))
"""


def test_qt_runs_on_the_trimmed_library(tmp_path: Path) -> None:
    _needs_tools()
    bundle = _fake_bundle(tmp_path)
    icu_trim.trim_bundle(bundle)
    lib = icu_trim.find_library(bundle)
    assert lib is not None
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           # the trimmed libicudata is loaded first; Qt's libicuuc then binds to it by soname
           "LD_PRELOAD": str(lib)}
    proc = subprocess.run([sys.executable, "-c", QT_PROBE], env=env, capture_output=True,
                          check=False, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["compare"] < 0  # root collation: a before B
    assert out["upper"] == "STRASSE"
    assert out["tz_valid"] and out["tz_name"]
    assert out["label_width"] > 0
    assert out["icudata"] == [str(lib)]  # Qt ran on the trimmed library, not the wheel's
