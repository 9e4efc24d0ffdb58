"""Wrap the Linux one-dir bundle into a .deb (dpkg-deb): /opt/ctx, `ctx` and `ctx-app` on
PATH, a menu entry and an icon.

    python packaging/linux/make_deb.py --bundle dist/ctx --version 0.1.0 --out dist/ctx.deb
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ICONS = HERE.parent / "icons"
# What the bundled Qt (PySide6 wheels carry Qt itself) and libc need from the system.
DEPENDS = ("libc6 (>= 2.31), libgl1, libegl1, libfontconfig1, libfreetype6, libdbus-1-3, "
           "libxkbcommon0, libxkbcommon-x11-0, libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1, "
           "libxcb-shape0, libxcb-xinerama0, libxcb-randr0, libxcb-render-util0, libxcb-image0")


def control(version: str, arch: str, installed_kb: int) -> str:
    return (f"Package: ctx\nVersion: {version}\nArchitecture: {arch}\n"
            "Maintainer: ctx maintainers <ctx@localhost>\nSection: utils\nPriority: optional\n"
            f"Installed-Size: {installed_kb}\nDepends: {DEPENDS}\n"
            "Recommends: gnome-keyring | kwalletmanager\n"
            "Description: local context engine: encrypted memory for your AI assistant\n"
            " ctx ingests documents, conversations and coding-agent transcripts, keeps them\n"
            " encrypted on disk, and packs the most relevant pieces into a payload within\n"
            " a token budget. The tray app (ctx-app) hosts the engine; `ctx` is the\n"
            " command line. Nothing is downloaded at run time.\n")


def build(bundle: Path, version: str, arch: str, out: Path, stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)
    opt = stage / "opt" / "ctx"
    shutil.copytree(bundle, opt, symlinks=True)
    (stage / "usr" / "bin").mkdir(parents=True)
    for exe in ("ctx", "ctx-app"):
        os.symlink(f"/opt/ctx/{exe}", stage / "usr" / "bin" / exe)
    apps = stage / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    shutil.copy(HERE / "ctx.desktop", apps / "ctx.desktop")
    for size_dir, name in (("256x256", "ctx.png"), ("scalable", "ctx.svg")):
        icon_dir = stage / "usr" / "share" / "icons" / "hicolor" / size_dir / "apps"
        icon_dir.mkdir(parents=True)
        shutil.copy(ICONS / name, icon_dir / name)
    size_kb = sum(f.stat().st_size for f in stage.rglob("*") if f.is_file()) // 1024
    (stage / "DEBIAN").mkdir()
    (stage / "DEBIAN" / "control").write_text(control(version, arch, size_kb), encoding="utf-8")
    for dirpath, dirnames, filenames in os.walk(stage):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "-z6", "--build", str(stage),
                    str(out)], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--arch", default="amd64")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    build(args.bundle, args.version, args.arch, args.out, Path("build") / "deb")
    print(f"{args.out} ({args.out.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
