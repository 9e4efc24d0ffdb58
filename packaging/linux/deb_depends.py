"""The .deb's Depends, from what the bundled ELF files actually load.

Every library an ELF file in the bundle names (``DT_NEEDED``) is either
shipped in the bundle (by file name, soname or link) or must come from the
system. Each of the latter is found where the dynamic loader finds it on the
build host (``ldconfig -p``), mapped to the Debian package that owns that
file (``dpkg-query -S``), and declared with the minimum version the
package's shlibs file states, as dpkg-shlibdeps does when it has no symbols
file. glibc (libc6) gets the floor computed from the symbol versions instead
(packaging/floors.py): its shlibs file names the build host's own version.
A library that is neither shipped nor found stops the build, naming it and
what needs it: that is a plugin kept without its library (or a build host
missing a package the CI job should install).

    python packaging/linux/deb_depends.py dist/ctx      # prints the Depends line
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import elfinfo as elf

LOADER = re.compile(r"^ld-linux.*\.so\.\d+$")  # the dynamic loader: part of libc6
LIBC_PACKAGE = "libc6"
# `ldconfig -p` flags of each machine's native libraries
LDCONFIG_ARCH = {"x86_64": "x86-64", "aarch64": "AArch64"}
DPKG_INFO = Path("/var/lib/dpkg/info")


class DependsError(RuntimeError):
    """A needed library is neither in the bundle nor owned by a package on the build host."""


@dataclass(frozen=True)
class Need:
    """One library the bundle takes from the system, and the package that provides it."""

    soname: str
    package: str
    dependency: str  # "libxcb1 (>= 1.12)"
    needed_by: tuple[str, ...]  # bundle-relative paths


def shipped_names(bundle: Path, infos: Iterable[elf.ElfInfo]) -> set[str]:
    """The library names the bundle answers itself: files, sonames and links."""
    names = {p.name for p in bundle.rglob("*") if p.is_symlink()}
    for info in infos:
        names.add(info.path.name)
        if info.soname:
            names.add(info.soname)
    return names


def external_needs(bundle: Path, infos: Iterable[elf.ElfInfo]) -> dict[str, list[str]]:
    """soname -> the bundle files that need it, for every library the bundle does not ship."""
    infos = list(infos)
    shipped = shipped_names(bundle, infos)
    out: dict[str, list[str]] = {}
    for info in infos:
        for name in info.needed:
            if name not in shipped:
                out.setdefault(name, []).append(info.path.relative_to(bundle).as_posix())
    return out


def ldconfig_paths(text: str | None = None, machine: str | None = None) -> dict[str, str]:
    """soname -> path of the native library the loader would use (first entry wins)."""
    if text is None:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                              check=True).stdout
    flag = LDCONFIG_ARCH.get(machine or platform.machine())
    out: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if not m or (flag and flag not in m.group(2)):
            continue
        out.setdefault(m.group(1), m.group(3))
    return out


def dpkg_owner(path: str) -> str | None:
    """The package owning ``path`` (tried as given, resolved, and across the /usr merge)."""
    real = str(Path(path).resolve())
    candidates = []
    for p in (path, real):
        candidates += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for p in dict.fromkeys(candidates):
        proc = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True,
                              check=False)
        if proc.returncode == 0 and proc.stdout:
            return proc.stdout.split(":", 1)[0].split(",")[0].strip()
    return None


def shlibs_name(soname: str) -> tuple[str, str] | None:
    """("libxcb", "1") for libxcb.so.1; ("libfoo", "1.2") for libfoo-1.2.so (shlibs' naming)."""
    m = re.match(r"^(.+)\.so\.(.+)$", soname) or re.match(r"^(.+)-([0-9][^-]*)\.so$", soname)
    return (m.group(1), m.group(2)) if m else None


def shlibs_dependency(package: str, soname: str, info_dir: Path = DPKG_INFO) -> str | None:
    """The dependency the package's shlibs file declares for ``soname`` ("libxcb1 (>= 1.12)")."""
    key = shlibs_name(soname)
    if key is None:
        return None
    for path in sorted(info_dir.glob(f"{package}.shlibs")) + sorted(
            info_dir.glob(f"{package}:*.shlibs")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and not parts[0].endswith(":") and (parts[0], parts[1]) == key:
                return parts[2].strip()
    return None


def plan(needs: Mapping[str, list[str]], resolve: Callable[[str], str | None],
         owner: Callable[[str], str | None],
         dependency: Callable[[str, str], str | None]) -> list[Need]:
    """Each external library's package and dependency; DependsError for any left unresolved."""
    out: list[Need] = []
    missing: list[str] = []
    for soname, users in sorted(needs.items()):
        if LOADER.match(soname):
            out.append(Need(soname, LIBC_PACKAGE, LIBC_PACKAGE, tuple(users)))
            continue
        path = resolve(soname)
        package = owner(path) if path else None
        if package is None:
            where = "not found on the build host" if path is None else f"{path}: no package"
            missing.append(f"{soname} ({where}), needed by {', '.join(sorted(users)[:3])}")
            continue
        dep = dependency(package, soname) or package
        out.append(Need(soname, package, dep, tuple(users)))
    if missing:
        raise DependsError("libraries the bundle needs but neither ships nor can declare:\n  "
                           + "\n  ".join(missing))
    return out


def depends_line(needs: Iterable[Need], glibc_floor: str) -> str:
    """The Depends field: one entry per package (libc6 at the computed floor), sorted."""
    by_package: dict[str, str] = {}
    for need in needs:
        if need.package == LIBC_PACKAGE:
            by_package[LIBC_PACKAGE] = f"{LIBC_PACKAGE} (>= {glibc_floor})"
        else:
            by_package.setdefault(need.package, need.dependency)
    by_package.setdefault(LIBC_PACKAGE, f"{LIBC_PACKAGE} (>= {glibc_floor})")
    return ", ".join(by_package[p] for p in sorted(by_package))


def compute(bundle: Path, glibc_floor: str) -> tuple[str, list[Need]]:
    """(Depends line, the needs behind it) of the bundle folder, on this build host."""
    infos = elf.scan(bundle)
    paths = ldconfig_paths()
    needs = plan(external_needs(bundle, infos), paths.get, dpkg_owner, shlibs_dependency)
    return depends_line(needs, glibc_floor), needs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bundle", type=Path)
    p.add_argument("--glibc", required=True, help="the glibc floor (packaging/floors.py)")
    args = p.parse_args()
    try:
        line, needs = compute(args.bundle, args.glibc)
    except DependsError as exc:
        sys.stderr.write(f"deb_depends: {exc}\n")
        return 1
    for need in needs:
        sys.stderr.write(f"{need.soname}: {need.dependency} ({len(need.needed_by)} files)\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
