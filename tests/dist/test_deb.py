"""The .deb: Depends from what the bundled libraries load, Installed-Size as dpkg counts it,
a real maintainer, the copyright file and the prerm (packaging/linux/make_deb.py).

Fake bundles made of real libraries of this system (copies, or links to PySide6's
own Qt libraries); dpkg-deb builds and reads the package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dist.test_platform_paths import PACKAGING, REPO

sys.path[:0] = [str(PACKAGING), str(PACKAGING / "linux")]
import deb_depends
import make_deb

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("dpkg-query") is None
    or shutil.which("ldconfig") is None, reason="needs a Debian-family system (dpkg, ldconfig)")
MAINTAINER = "Ada Lovelace <ada@lovelace.org>"


def _system(*names: str) -> dict[str, Path]:
    found = deb_depends.ldconfig_paths()
    if not all(n in found for n in names):
        pytest.skip(f"needs {', '.join(names)} on this system")
    return {n: Path(found[n]).resolve() for n in names}


def _bundle(tmp_path: Path) -> Path:
    """ctx (a copy of /bin/true) and two xcb libraries; libxcb-render is shipped."""
    libs = _system("libxcb-cursor.so.0", "libxcb-render.so.0", "libxcb.so.1")
    bundle = tmp_path / "bundle"
    internal = bundle / "_internal"
    internal.mkdir(parents=True)
    shutil.copy(shutil.which("true") or "/bin/true", bundle / "ctx")
    os.symlink("ctx", bundle / "ctx-app")
    for name in ("libxcb-cursor.so.0", "libxcb-render.so.0"):
        shutil.copy(libs[name], internal / name)
    (internal / "big.bin").write_bytes(b"x" * 300_000)
    os.symlink("big.bin", internal / "big-link.bin")  # counted once, as a link
    return bundle


def test_depends_are_what_the_libraries_load_and_the_bundle_lacks(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    line, needs = deb_depends.compute(bundle, "2.34")
    packages = {n.package for n in needs}
    assert {"libc6", "libxcb1"} <= packages
    assert "libxcb-render0" not in packages  # shipped in the bundle: not declared
    assert "libxcb-cursor0" not in packages
    assert "libc6 (>= 2.34)" in line.split(", ")
    libxcb = next(n for n in needs if n.soname == "libxcb.so.1")
    assert libxcb.dependency.startswith("libxcb1") and libxcb.needed_by
    assert line == ", ".join(sorted(line.split(", ")))


def test_a_plugin_kept_without_its_library_stops_the_build(tmp_path: Path) -> None:
    """libadwaita.so (Wayland decorations) needs libQt6Svg: dropping it fails here."""
    import importlib.util

    spec = importlib.util.find_spec("PySide6")
    assert spec and spec.origin
    qt = Path(spec.origin).parent / "Qt"
    plugin = qt / "plugins" / "wayland-decoration-client" / "libadwaita.so"
    if not plugin.exists():
        pytest.skip("this PySide6 has no libadwaita decoration plugin")
    bundle = tmp_path / "bundle"
    lib = bundle / "_internal" / "PySide6" / "Qt" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(plugin, bundle / "_internal" / "libadwaita.so")
    for qt_lib in (qt / "lib").glob("libQt6*.so.6"):
        if qt_lib.name != "libQt6Svg.so.6":
            os.symlink(qt_lib, lib / qt_lib.name)  # shipped (by name)
    with pytest.raises(deb_depends.DependsError) as err:
        deb_depends.compute(bundle, "2.34")
    assert "libQt6Svg.so.6" in str(err.value) and "libadwaita.so" in str(err.value)
    os.symlink(qt / "lib" / "libQt6Svg.so.6", lib / "libQt6Svg.so.6")
    try:
        line, _ = deb_depends.compute(bundle, "2.34")
    except deb_depends.DependsError as exc:  # a Wayland library this host lacks
        pytest.skip(f"host lacks a system library: {exc}")
    assert "libwayland-client0" in line


def test_installed_size_counts_links_once_and_never_follows_them(tmp_path: Path) -> None:
    root = tmp_path / "stage"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("x" * 5000)  # not installed: not counted
    (root / "a").mkdir()
    (root / "a" / "one").write_bytes(b"1")  # 1 KiB
    (root / "a" / "big").write_bytes(b"x" * 10_241)  # 11 KiB
    os.link(root / "a" / "big", root / "a" / "big-hardlink")  # once
    os.symlink("big", root / "a" / "link")  # 1 KiB, not 11
    os.symlink("/opt/ctx/ctx", root / "a" / "ctx")  # absolute, dangling here: 1 KiB
    os.symlink("/usr", root / "a" / "usr-link")  # never followed onto the host
    # root 1 + dir a 1 + one 1 + big 11 + three links 3
    assert make_deb.installed_size_kib(root) == 17


def test_maintainer_must_be_a_real_address(tmp_path: Path) -> None:
    assert make_deb.maintainer({"DEB_MAINTAINER": MAINTAINER}) == MAINTAINER
    assert make_deb.maintainer({"DEBFULLNAME": "Ada", "DEBEMAIL": "ada@lovelace.org"},
                               pyproject=tmp_path / "none") == "Ada <ada@lovelace.org>"
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nmaintainers = [{name = "B", email = '
                         '"b@ctx.dev"}]\n')
    assert make_deb.maintainer({}, pyproject=pyproject) == "B <b@ctx.dev>"
    for bad in ("ctx maintainers <ctx@localhost>", "x <x@example.com>", "ada@lovelace.org",
                "A <a@b.invalid>", "A <a@host.local>"):
        with pytest.raises(make_deb.PackagingError):
            make_deb.maintainer({"DEB_MAINTAINER": bad})
    with pytest.raises(make_deb.PackagingError, match="DEB_MAINTAINER"):
        make_deb.maintainer({}, pyproject=tmp_path / "none")


def test_the_package_carries_its_copyright_prerm_and_computed_fields(tmp_path: Path) -> None:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("needs dpkg-deb")
    bundle = _bundle(tmp_path)
    out = tmp_path / "ctx_0.0.1_amd64.deb"
    stage = tmp_path / "stage"
    make_deb.build(bundle, "0.0.1", "amd64", out, stage, maint=MAINTAINER)

    def field(name: str) -> str:
        return subprocess.run(["dpkg-deb", "-f", str(out), name], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert field("Maintainer") == MAINTAINER
    size = int(field("Installed-Size"))
    assert size == make_deb.installed_size_kib(stage)
    assert size < 300 + 300  # the 300 kB file once; its link did not count it again
    depends = field("Depends").split(", ")
    assert any(d.startswith("libc6 (>= ") for d in depends)
    assert not any(d.startswith(("libxcb-render0", "libxcb-xinerama0")) for d in depends)
    listing = subprocess.run(["dpkg-deb", "-c", str(out)], capture_output=True, text=True,
                             check=True).stdout
    assert "./usr/share/doc/ctx/copyright" in listing
    assert "./usr/bin/ctx -> /opt/ctx/ctx" in listing
    prerm = subprocess.run(["dpkg-deb", "-I", str(out), "prerm"], capture_output=True,
                           text=True, check=True).stdout
    assert "uninstall-integrations --all-users --installed-at /opt/ctx" in prerm
    copyright_text = (stage / "usr" / "share" / "doc" / "ctx" / "copyright").read_text()
    assert copyright_text.startswith("Format: https://www.debian.org/doc/packaging-manuals/"
                                     "copyright-format/1.0/")
    assert "License: MIT" in copyright_text and "License: LGPL-3.0-only" in copyright_text
    assert "Permission is hereby granted" in copyright_text
    assert "/opt/ctx/_internal/licenses" in copyright_text
    assert (REPO / "LICENSE").read_text().splitlines()[2] in copyright_text


def test_keyring_packages_are_suggested_not_recommended() -> None:
    """apt installs Recommends by default: gnome-keyring brought a PAM module that edits
    /etc/pam.d/common-password and systemd user units that stay after purge. ctx works
    without a keychain (a passphrase), so they are Suggests: installed only when asked."""
    text = make_deb.control("0.1.0", "amd64", 1, "libc6 (>= 2.35)", "Ada <ada@lovelace.org>")
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line
                  and not line.startswith(" "))
    assert "Recommends" not in fields
    assert fields["Suggests"] == "gnome-keyring | kwalletmanager"
