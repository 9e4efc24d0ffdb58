"""A real local corpus for benchmarks: the Python sources and docs installed on this machine.

Files are taken in a fixed order (sorted paths of the standard library, then
site-packages), so two runs use the same text.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SUFFIXES = {".py", ".md", ".rst", ".txt"}


def corpus_roots() -> list[Path]:
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    return [r for r in dict.fromkeys(roots) if r.is_dir()]


def corpus_files(max_bytes: int = 400_000) -> Iterator[Path]:
    seen: set[Path] = set()
    for root in corpus_roots():
        for path in sorted(root.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if "site-packages" in path.parts and root.name != "site-packages":
                continue  # the stdlib root contains site-packages: take it once, below
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if 200 <= size <= max_bytes:
                yield path


if __name__ == "__main__":  # pragma: no cover
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for i, p in enumerate(corpus_files()):
        if i >= n:
            break
        print(p)
