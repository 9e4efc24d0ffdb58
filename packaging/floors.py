"""The oldest systems a build runs on, computed from what it ships, and checked where declared.

- Linux: the highest ``GLIBC_x.y`` symbol version any ELF file in the bundle
  requires (PySide6's Qt needs 2.34; libraries copied from the build host may
  need more). The .deb declares ``libc6 (>= floor)``; the README says
  "glibc floor+".
- macOS: the highest ``macosx_X_Y`` tag among the wheels of the distributions
  the bundle carries (onnxruntime's wheels are macOS 14 arm64 only). The .app's
  Info.plist declares ``LSMinimumSystemVersion``; the README says "macOS X+".

``check`` compares each declaration with the computed floor and exits 1 on any
difference, naming the file, what it says and what the build needs (and which
file needs it). The README's floors describe the release build (CI), so a
local build on a newer host may differ: ``--readme-warn`` reports the README
without failing (scripts/build-dist.sh uses it outside CI).

    python packaging/floors.py linux --bundle dist/ctx [--deb X.deb] [--readme README.md]
    python packaging/floors.py macos --dists build/bundle-dists.json [--plist ...] [--readme ...]
"""

from __future__ import annotations

import argparse
import json
import plistlib
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "linux"))
import elfinfo

GLIBC_VERSION = re.compile(r"^GLIBC_(\d+(?:\.\d+)+)$")  # not GLIBC_PRIVATE, GLIBC_ABI_DT_RELR
MACOS_TAG = re.compile(r"macosx_(\d+)_(\d+)_")
README_GLIBC = re.compile(r"glibc (\d+(?:\.\d+)+)\+")
README_MACOS = re.compile(r"macOS (\d+(?:\.\d+)?)\+")
CONTROL_LIBC = re.compile(r"(?:^|[ ,])libc6 \(>= ([0-9.]+)\)")


def vkey(version: str) -> tuple[int, ...]:
    """A version for comparing: "14" == "14.0", "2.35" < "2.36"."""
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def glibc_floor(infos: Iterable[elfinfo.ElfInfo]) -> tuple[str, list[str]]:
    """(highest GLIBC version required, the files requiring it); ("", []) if none does."""
    best: tuple[int, ...] = ()
    text, who = "", []
    for info in infos:
        for version in info.required_versions():
            m = GLIBC_VERSION.match(version)
            if not m:
                continue
            key = vkey(m.group(1))
            if key > best:
                best, text, who = key, m.group(1), [info.path.name]
            elif key == best:
                who.append(info.path.name)
    return text, sorted(set(who))


def macos_floor(tags_by_dist: dict[str, list[str]]) -> tuple[str, list[str]]:
    """(highest macOS version among wheel tags, the distributions whose tags set it)."""
    best: tuple[int, ...] = ()
    text, who = "", []
    for dist, tags in tags_by_dist.items():
        versions = [f"{m.group(1)}.{m.group(2)}" for t in tags if (m := MACOS_TAG.search(t))]
        if not versions:
            continue
        low = min(versions, key=vkey)  # a dist with several tags runs from its lowest
        if vkey(low) > best:
            best, text, who = vkey(low), low, [dist]
        elif vkey(low) == best:
            who.append(dist)
    return text, sorted(who)


def declared(pattern: re.Pattern[str], text: str, what: str) -> str:
    found = set(pattern.findall(text))
    if len(found) != 1:
        raise ValueError(f"{what}: expected one declaration matching {pattern.pattern!r}, "
                         f"found {sorted(found) or 'none'}")
    return found.pop()


def compare(floor: str, claims: dict[str, str], needed_by: list[str]) -> list[str]:
    """One line per declaration that differs from ``floor``."""
    why = f" (needed by {', '.join(needed_by[:4])})" if needed_by else ""
    return [f"{where} says {said}, the build needs {floor}{why}"
            for where, said in claims.items() if vkey(said) != vkey(floor)]


def deb_control(deb: Path) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True,
                          check=True).stdout


def _report(name: str, floor: str, strict: list[str], soft: list[str]) -> int:
    for line in strict:
        sys.stderr.write(f"floors: {line}\n")
    for line in soft:
        sys.stderr.write(f"floors: warning: {line} (the README describes the release build)\n")
    print(json.dumps({name: floor, "ok": not strict}))
    return 1 if strict else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="system", required=True)
    lin = sub.add_parser("linux", help="glibc floor of a bundle folder")
    lin.add_argument("--bundle", type=Path, required=True)
    lin.add_argument("--deb", type=Path)
    mac = sub.add_parser("macos", help="macOS floor from the bundled distributions' wheel tags")
    mac.add_argument("--dists", type=Path, required=True,
                     help="bundle-dists.json written by the spec (packaging/notices.py)")
    mac.add_argument("--plist", type=Path)
    for s in (lin, mac):
        s.add_argument("--readme", type=Path)
        s.add_argument("--readme-warn", action="store_true",
                       help="report a README that differs, without failing")
    args = p.parse_args(argv)
    strict: dict[str, str] = {}
    readme: dict[str, str] = {}
    if args.system == "linux":
        floor, who = glibc_floor(elfinfo.scan(args.bundle))
        if not floor:
            sys.stderr.write(f"floors: no GLIBC symbol version in {args.bundle}\n")
            return 1
        if args.deb:
            strict[f"{args.deb.name} Depends"] = declared(CONTROL_LIBC, deb_control(args.deb),
                                                         str(args.deb))
        pattern = README_GLIBC
    else:
        dists = json.loads(args.dists.read_text(encoding="utf-8"))
        floor, who = macos_floor({d["name"]: d.get("tags", []) for d in dists})
        if not floor:
            sys.stderr.write(f"floors: no macosx wheel tag among {args.dists}\n")
            return 1
        if args.plist:
            with open(args.plist, "rb") as fh:
                strict[f"{args.plist.name} LSMinimumSystemVersion"] = str(
                    plistlib.load(fh)["LSMinimumSystemVersion"])
        pattern = README_MACOS
    if args.readme:
        (readme if args.readme_warn else strict)[args.readme.name] = declared(
            pattern, args.readme.read_text(encoding="utf-8"), str(args.readme))
    name = "glibc" if args.system == "linux" else "macos"
    return _report(name, floor, compare(floor, strict, who), compare(floor, readme, who))


if __name__ == "__main__":
    sys.exit(main())
