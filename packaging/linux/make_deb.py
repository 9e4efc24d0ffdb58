"""Wrap the Linux one-dir bundle into a .deb (dpkg-deb): /opt/ctx, `ctx` and `ctx-app` on
PATH, a menu entry, an icon, the copyright file, and a prerm that undoes what ctx set up.

    python packaging/linux/make_deb.py --bundle dist/ctx --version 0.1.0 --out dist/ctx.deb

- Depends: what the bundled ELF files load and the bundle does not ship
  (deb_depends.py), libc6 at the glibc floor computed from them (floors.py).
- Installed-Size: counted as dpkg-gencontrol counts it (each file and link by
  its own size, rounded up to a KiB; 1 KiB per directory; links never followed).
- Maintainer: DEB_MAINTAINER, else DEBFULLNAME and DEBEMAIL (Debian's own
  convention), else pyproject's first maintainer; an address that cannot
  receive mail (localhost, example, invalid...) is refused.
- prerm (on remove): ``ctx uninstall-integrations --all-users`` stops the users'
  running ctx processes of this install and takes out the agent hooks, MCP
  entries and login items that point at it, saying what it removed.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ICONS = HERE.parent / "icons"
sys.path[:0] = [str(HERE), str(HERE.parent)]
import deb_depends
import elfinfo
import floors

INSTALL_DIR = "/opt/ctx"
LINKS = ("ctx", "ctx-app")
MAINTAINER = re.compile(r"^[^<>@\n]+ <[^<>@\s]+@([^<>@\s]+\.[A-Za-z]{2,})>$")
NO_MAIL = re.compile(r"(?i)(^|\.)(localhost|localdomain|example(\.(com|net|org))?|invalid|test"
                     r"|local)$")
DESCRIPTION = (
    "Description: local context engine: encrypted memory for your AI assistant\n"
    " ctx ingests documents, conversations and coding-agent transcripts, keeps them\n"
    " encrypted on disk, and packs the most relevant pieces into a payload within\n"
    " a token budget. The tray app (ctx-app) hosts the engine; `ctx` is the\n"
    " command line. Nothing is downloaded at run time.\n")
PRERM = f"""#!/bin/sh
# Before the files go: stop each user's ctx processes of this install, and take out the
# agent hooks, MCP entries and login items that point at it (never the users' data).
set -e
if [ "$1" = remove ] && [ -x {INSTALL_DIR}/ctx ]; then
    {INSTALL_DIR}/ctx uninstall-integrations --all-users --installed-at {INSTALL_DIR} \\
        {" ".join(f"--installed-at /usr/bin/{name}" for name in LINKS)} || \\
        echo "ctx: could not undo every integration (see above); the package is removed anyway"
fi
exit 0
"""


class PackagingError(RuntimeError):
    """The package cannot be made as asked (bad maintainer, missing library)."""


def maintainer(env: dict[str, str] | None = None, pyproject: Path = REPO / "pyproject.toml"
               ) -> str:
    """The Maintainer field, from the environment or pyproject; refused when unusable."""
    env = dict(os.environ if env is None else env)
    value = env.get("DEB_MAINTAINER", "").strip()
    if not value and env.get("DEBFULLNAME") and env.get("DEBEMAIL"):
        value = f"{env['DEBFULLNAME'].strip()} <{env['DEBEMAIL'].strip()}>"
    if not value and pyproject.is_file():
        people = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get(
            "maintainers") or []
        first = next((p for p in people if p.get("name") and p.get("email")), None)
        if first:
            value = f"{first['name']} <{first['email']}>"
    if not value:
        raise PackagingError("no maintainer: set DEB_MAINTAINER='Name <address>' (or "
                             "DEBFULLNAME and DEBEMAIL, or [project] maintainers in pyproject)")
    m = MAINTAINER.match(value)
    if not m:
        raise PackagingError(f"maintainer {value!r} is not 'Name <address>'")
    if NO_MAIL.search(m.group(1)):
        raise PackagingError(f"maintainer {value!r}: {m.group(1)} receives no mail")
    return value


def installed_size_kib(root: Path) -> int:
    """Installed-Size as dpkg-gencontrol computes it: per file or link, its own size rounded
    up to a KiB (hard links once); 1 KiB per directory or other object; DEBIAN/ left out."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and "DEBIAN" in dirnames:
            dirnames.remove("DEBIAN")
        for name in [*dirnames, *filenames]:
            st = os.lstat(os.path.join(dirpath, name))
            if name in dirnames and not os.path.islink(os.path.join(dirpath, name)):
                total += 1
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            if st.st_nlink > 1:
                seen.add(key)
            total += math.ceil(st.st_size / 1024)
    return total + 1  # the package root itself, as `find` lists it


def control(version: str, arch: str, installed_kib: int, depends: str, maint: str) -> str:
    return (f"Package: ctx\nVersion: {version}\nArchitecture: {arch}\n"
            f"Maintainer: {maint}\nSection: utils\nPriority: optional\n"
            f"Installed-Size: {installed_kib}\nDepends: {depends}\n"
            "Suggests: gnome-keyring | kwalletmanager\n" + DESCRIPTION)


def copyright_file(licenses: str) -> str:
    """/usr/share/doc/ctx/copyright (machine-readable format 1.0)."""
    mit = (REPO / "LICENSE").read_text(encoding="utf-8")
    holder = next(line for line in mit.splitlines() if line.startswith("Copyright"))
    body = "\n".join(f" {line}" if line.strip() else " ." for line in
                     mit.split(holder, 1)[1].strip().splitlines())
    return (
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        "Upstream-Name: ctx\n"
        f"Comment: ctx bundles third-party software; the licence texts of all of it are in\n"
        f" {licenses}/ (THIRD-PARTY-NOTICES.txt lists each component, its version and\n"
        " licence, generated from the installed metadata when this package was built).\n\n"
        "Files: *\n"
        f"{holder}\nLicense: MIT\n\n"
        f"Files: {INSTALL_DIR.lstrip('/')}/_internal/PySide6/* {INSTALL_DIR.lstrip('/')}"
        "/_internal/shiboken6/*\n"
        "Copyright: The Qt Company Ltd. and other contributors\n"
        "License: LGPL-3.0-only\n"
        f" See {licenses}/Qt-NOTICE.txt and /usr/share/common-licenses/LGPL-3.\n\n"
        f"Files: {INSTALL_DIR.lstrip('/')}/_internal/ctx_models/*\n"
        "Copyright: the sentence-transformers authors (all-MiniLM-L6-v2)\n"
        "License: Apache-2.0\n"
        f" See {licenses}/MiniLM-NOTICE.txt and /usr/share/common-licenses/Apache-2.0.\n\n"
        f"License: MIT\n{body}\n")


def build(bundle: Path, version: str, arch: str, out: Path, stage: Path,
          maint: str | None = None) -> str:
    """Make the .deb; returns its control text."""
    maint = maint or maintainer()
    floor, _who = floors.glibc_floor(elfinfo.scan(bundle))
    if not floor:
        raise PackagingError(f"no GLIBC symbol version found in {bundle}")
    depends, _needs = deb_depends.compute(bundle, floor)
    shutil.rmtree(stage, ignore_errors=True)
    opt = stage / INSTALL_DIR.lstrip("/")
    shutil.copytree(bundle, opt, symlinks=True)
    (stage / "usr" / "bin").mkdir(parents=True)
    for exe in LINKS:
        os.symlink(f"{INSTALL_DIR}/{exe}", stage / "usr" / "bin" / exe)
    apps = stage / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    shutil.copy(HERE / "ctx.desktop", apps / "ctx.desktop")
    for size_dir, name in (("256x256", "ctx.png"), ("scalable", "ctx.svg")):
        icon_dir = stage / "usr" / "share" / "icons" / "hicolor" / size_dir / "apps"
        icon_dir.mkdir(parents=True)
        shutil.copy(ICONS / name, icon_dir / name)
    doc = stage / "usr" / "share" / "doc" / "ctx"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(copyright_file(f"{INSTALL_DIR}/_internal/licenses"),
                                   encoding="utf-8")
    for dirpath, dirnames, filenames in os.walk(stage):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
    text = control(version, arch, installed_size_kib(stage), depends, maint)
    (stage / "DEBIAN").mkdir(mode=0o755)
    (stage / "DEBIAN" / "control").write_text(text, encoding="utf-8")
    prerm = stage / "DEBIAN" / "prerm"
    prerm.write_text(PRERM, encoding="utf-8")
    prerm.chmod(0o755)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "-z6", "--build", str(stage),
                    str(out)], check=True, stdout=subprocess.DEVNULL)
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check-maintainer", action="store_true",
                   help="only say whether a usable maintainer is set (before a long build)")
    p.add_argument("--bundle", type=Path)
    p.add_argument("--version")
    p.add_argument("--arch", default="amd64")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.check_maintainer:
        try:
            print(maintainer())
        except PackagingError as exc:
            sys.stderr.write(f"make_deb: {exc}\n")
            return 1
        return 0
    if args.bundle is None or args.version is None or args.out is None:
        p.error("--bundle, --version and --out are needed to make the .deb")
    try:
        text = build(args.bundle, args.version, args.arch, args.out, Path("build") / "deb")
    except (PackagingError, deb_depends.DependsError) as exc:
        sys.stderr.write(f"make_deb: {exc}\n")
        return 1
    sys.stdout.write(text)
    print(f"{args.out} ({args.out.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
