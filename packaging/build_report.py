"""The build report: sizes of the bundle and artifacts, build times, what the bundle carries.

    python packaging/build_report.py --dist dist --version V --arch A --seconds total=N ...

Writes dist/build-report.json and dist/build-report.md and prints the latter.
Sizes: "on disk" is the blocks the bundle occupies (du), "apparent" the sum of
file sizes. Start-up and latency are measured by ``python -m bench.dist_bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

MB = 1_000_000
BUDGET_DISK_MB, MOONSHOT_DISK_MB, BUDGET_COMPRESSED_MB = 450, 300, 200


def disk_bytes(path: Path) -> int:
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[0])


def apparent_bytes(path: Path) -> tuple[int, int]:
    total = count = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
                count += 1
    return total, count


def largest(internal: Path, n: int = 20) -> list[tuple[str, int]]:
    """The biggest entries of _internal (a folder counts as the sum of its files)."""
    sizes = [(p.name, apparent_bytes(p)[0] if p.is_dir() else p.stat().st_size)
             for p in internal.iterdir() if not p.is_symlink()]
    return sorted(sizes, key=lambda s: -s[1])[:n]


def largest_files(internal: Path, n: int = 40) -> list[tuple[str, int]]:
    """The biggest single files, by path inside _internal: where pruning could still help."""
    files = [(p.relative_to(internal).as_posix(), p.stat().st_size)
             for p in internal.rglob("*") if p.is_file() and not p.is_symlink()]
    return sorted(files, key=lambda s: -s[1])[:n]


def tarball(dist: Path, version: str, arch: str) -> Path | None:
    """The Linux tarball, whatever it is compressed with (see scripts/build-dist.sh)."""
    found = sorted(dist.glob(f"ctx-{version}-linux-{arch}.tar.*"))
    return found[0] if found else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist", type=Path, default=Path("dist"))
    p.add_argument("--version", required=True)
    p.add_argument("--arch", default="amd64")
    p.add_argument("--seconds", nargs="*", default=[], help="step=seconds")
    args = p.parse_args()
    bundle = args.dist / "ctx"
    apparent, files = apparent_bytes(bundle)
    tar = tarball(args.dist, args.version, args.arch)
    deb = args.dist / f"ctx_{args.version}_{args.arch}.deb"
    export_info = Path("build/onnx-export.json")
    icu_info = Path("build/icu-trim.json")
    report = {
        "version": args.version, "arch": args.arch,
        "bundle_disk_bytes": disk_bytes(bundle), "bundle_apparent_bytes": apparent,
        "bundle_files": files,
        "tarball": tar.name if tar else None,
        "tarball_bytes": tar.stat().st_size if tar else None,
        "deb_bytes": deb.stat().st_size if deb.exists() else None,
        "largest": largest(bundle / "_internal"),
        "largest_files": largest_files(bundle / "_internal"),
        "seconds": {k: int(v) for k, v in (s.split("=", 1) for s in args.seconds)},
        "onnx_export": json.loads(export_info.read_text()) if export_info.exists() else None,
        "icu_trim": json.loads(icu_info.read_text()) if icu_info.exists() else None,
        "has_torch": (bundle / "_internal" / "torch").exists(),
        "has_qt": (bundle / "_internal" / "PySide6").exists(),
    }
    (args.dist / "build-report.json").write_text(json.dumps(report, indent=2) + "\n")
    d = report["bundle_disk_bytes"] / MB
    lines = [f"# ctx {args.version} Linux {args.arch} build report", "",
             "| what | size MB | target |", "|---|---|---|",
             (f"| bundle on disk (du) | {d:.1f} | <= {BUDGET_DISK_MB} (moonshot "
             f"{MOONSHOT_DISK_MB}): {'ok' if d <= BUDGET_DISK_MB else 'OVER'} |"),
             f"| bundle apparent ({files} files) | {apparent / MB:.1f} | |"]
    for name, size in ((report["tarball"], report["tarball_bytes"]),
                       (".deb (xz)", report["deb_bytes"])):
        if size:
            ok = "ok" if size / MB <= BUDGET_COMPRESSED_MB else "OVER"
            lines.append(f"| {name} | {size / MB:.1f} | <= {BUDGET_COMPRESSED_MB}: {ok} |")
    lines += ["", "| largest in _internal | MB |", "|---|---|"]
    lines += [f"| {name} | {size / MB:.1f} |" for name, size in report["largest"]]
    lines += ["", "| largest files | MB |", "|---|---|"]
    lines += [f"| {name} | {size / MB:.1f} |" for name, size in report["largest_files"]]
    lines += ["", "| build step | seconds |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report["seconds"].items()]
    icu = report["icu_trim"]
    if isinstance(icu, dict) and "bytes_after" in icu:
        lines += ["", (f"Qt's ICU data trimmed to root (packaging/linux/icu_trim.py): "
                       f"{icu['bytes_before'] / MB:.1f} -> {icu['bytes_after'] / MB:.1f} MB")]
    lines += ["", f"torch in bundle: {report['has_torch']}; Qt in bundle: {report['has_qt']}"]
    text = "\n".join(lines) + "\n"
    (args.dist / "build-report.md").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
