"""The declared floors come from the built files (packaging/floors.py, linux/elfinfo.py).

Checked here on the system's own libraries (the ELF reader against readelf, the
glibc floor of real files), on the macOS wheel tags the release carries, and on
small real artifacts (a README, a .deb made with dpkg-deb, an Info.plist): the
check step fails when any of them says another floor than the files need.
"""

from __future__ import annotations

import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING, REPO

sys.path[:0] = [str(PACKAGING), str(PACKAGING / "linux")]
import deb_depends
import elfinfo
import floors

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF: Linux only")

# Tags of the wheels a macOS arm64 build carries, as their WHEEL files state them (PyPI:
# onnxruntime-1.32.0-cp311-cp311-macosx_14_0_arm64.whl is the only macOS wheel of 1.32.0;
# pyside6_essentials-6.11.3-cp310-abi3-macosx_13_0_universal2.whl).
MACOS_TAGS = {"onnxruntime": ["cp311-cp311-macosx_14_0_arm64"],
              "PySide6_Essentials": ["cp310-abi3-macosx_13_0_universal2"],
              "pyzmq": ["cp311-cp311-macosx_10_15_universal2", "cp311-cp311-macosx_11_0_arm64"],
              "certifi": ["py3-none-any"]}


def _system_libraries(*names: str) -> list[Path]:
    found = deb_depends.ldconfig_paths()
    paths = [Path(found[n]).resolve() for n in names if n in found]
    if len(paths) < len(names) or shutil.which("readelf") is None:
        pytest.skip(f"needs readelf and {', '.join(names)} on this system")
    return paths


def _readelf(path: Path) -> tuple[tuple[str, ...], str | None, dict[str, frozenset[str]]]:
    dyn = subprocess.run(["readelf", "-dW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    needed = tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn))
    soname = next(iter(re.findall(r"\(SONAME\)\s+Library soname: \[(.*?)\]", dyn)), None)
    ver = subprocess.run(["readelf", "-VW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    versions: dict[str, set[str]] = {}
    current = None
    for line in ver.split("Version needs section")[-1].splitlines() if "Version needs" in ver \
            else []:
        if m := re.search(r"File: (\S+)", line):
            current = m.group(1)
            versions.setdefault(current, set())
        elif (m := re.search(r"Name: (\S+)", line)) and current:
            versions[current].add(m.group(1))
    return needed, soname, {k: frozenset(v) for k, v in versions.items()}


def test_elf_reader_agrees_with_readelf_on_system_libraries() -> None:
    libs = _system_libraries("libstdc++.so.6", "libexpat.so.1", "libxcb.so.1", "libz.so.1")
    for path in [*libs, Path(sys.executable).resolve(), Path("/bin/ls").resolve()]:
        info = elfinfo.read(path)
        assert (info.needed, info.soname, info.versions) == _readelf(path), path
    assert elfinfo.is_elf(libs[0]) and not elfinfo.is_elf(REPO / "README.md")
    with pytest.raises(elfinfo.NotElf):
        elfinfo.read(REPO / "README.md")


def test_glibc_floor_is_the_highest_version_any_file_needs(tmp_path: Path) -> None:
    libs = _system_libraries("libstdc++.so.6", "libz.so.1")
    for lib in libs:
        shutil.copy(lib, tmp_path / lib.name)
    infos = elfinfo.scan(tmp_path)
    floor, who = floors.glibc_floor(infos)
    expected = max((v for i in infos for v in i.required_versions()
                    if re.fullmatch(r"GLIBC_\d+(\.\d+)+", v)),
                   key=lambda v: floors.vkey(v.removeprefix("GLIBC_")))
    assert floor == expected.removeprefix("GLIBC_")
    assert who and all((tmp_path / name).exists() for name in who)
    # libz alone needs less than libstdc++ with it: the floor follows the files
    (tmp_path / libs[0].name).unlink()
    lower, _ = floors.glibc_floor(elfinfo.scan(tmp_path))
    assert floors.vkey(lower) <= floors.vkey(floor)
    assert floors.glibc_floor([]) == ("", [])


def test_versions_compare_as_numbers() -> None:
    assert floors.vkey("14") == floors.vkey("14.0")
    assert floors.vkey("2.9") < floors.vkey("2.34") < floors.vkey("2.35")


def test_macos_floor_comes_from_the_highest_wheel_tag() -> None:
    assert floors.macos_floor(MACOS_TAGS) == ("14.0", ["onnxruntime"])
    without = {k: v for k, v in MACOS_TAGS.items() if k != "onnxruntime"}
    assert floors.macos_floor(without) == ("13.0", ["PySide6_Essentials"])
    assert floors.macos_floor({"certifi": ["py3-none-any"]}) == ("", [])


def _make_deb(tmp_path: Path, depends: str) -> Path:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("needs dpkg-deb")
    stage = tmp_path / "stage"
    (stage / "DEBIAN").mkdir(parents=True)
    (stage / "DEBIAN" / "control").write_text(
        "Package: floortest\nVersion: 1\nArchitecture: all\nMaintainer: A <a@b.org>\n"
        f"Depends: {depends}\nDescription: t\n t\n")
    out = tmp_path / "t.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(stage), str(out)],
                   check=True, capture_output=True)
    return out


def test_check_fails_when_a_declaration_differs(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    libs = _system_libraries("libstdc++.so.6")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(libs[0], bundle / libs[0].name)
    floor, _ = floors.glibc_floor(elfinfo.scan(bundle))
    readme = tmp_path / "README.md"
    readme.write_text(f"| Any Linux (glibc {floor}+) | tarball |\n")
    good = _make_deb(tmp_path, f"libc6 (>= {floor}), libx (>= 1)")
    argv = ["linux", "--bundle", str(bundle), "--readme", str(readme)]
    assert floors.main([*argv, "--deb", str(good)]) == 0
    capsys.readouterr()
    readme.write_text("| Any Linux (glibc 2.31+) | tarball |\n")
    assert floors.main([*argv, "--deb", str(good)]) == 1
    err = capsys.readouterr().err
    assert "README.md says 2.31, the build needs " + floor in err and libs[0].name in err
    assert floors.main([*argv, "--deb", str(good), "--readme-warn"]) == 0  # local builds
    assert "warning" in capsys.readouterr().err
    (tmp_path / "b").mkdir()
    bad = _make_deb(tmp_path / "b", "libc6 (>= 2.17)")
    readme.write_text(f"glibc {floor}+\n")
    assert floors.main(["linux", "--bundle", str(bundle), "--deb", str(bad)]) == 1
    assert "Depends says 2.17" in capsys.readouterr().err


def test_check_of_the_macos_plist_and_readme(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    dists = tmp_path / "bundle-dists.json"
    import json

    dists.write_text(json.dumps([{"name": k, "tags": v} for k, v in MACOS_TAGS.items()]))
    plist = tmp_path / "Info.plist"
    readme = tmp_path / "README.md"
    readme.write_text("| macOS 14+ (Apple silicon) | dmg |\n")
    for said, code in (("14.0", 0), ("12.0", 1)):
        plist.write_bytes(plistlib.dumps({"LSMinimumSystemVersion": said}))
        assert floors.main(["macos", "--dists", str(dists), "--plist", str(plist),
                            "--readme", str(readme)]) == code
    assert "Info.plist LSMinimumSystemVersion says 12.0" in capsys.readouterr().err


def test_the_readme_states_each_floor_once() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert floors.declared(floors.README_GLIBC, text, "README")
    assert floors.declared(floors.README_MACOS, text, "README") == "14"
