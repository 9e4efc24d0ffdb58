"""Each package's docstring is its map: it names every module in it (as ``name`` or
``name.thing``), so a new module is placed where a reader looks first. Read with ast,
nothing imported.

engine/crypto, engine/embedding and engine/recall are not held to it yet (their maps
name some modules only)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAPPED = ("engine/api", "engine/store", "engine/flows", "engine/facade", "engine/backup",
          "engine/watching", "engine/retrieval", "engine/packing", "engine/ingest")
# bench/'s map: tests/test_bench_imports.py


def unmapped(package: Path) -> list[str]:
    """The modules of ``package`` its ``__init__`` docstring does not name."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""
    named = set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)(?:\.[^`]*)?``", doc))  # a, a.name
    return sorted(p.stem for p in package.glob("*.py")
                  if p.stem != "__init__" and p.stem not in named)


@pytest.mark.parametrize("package", MAPPED)
def test_the_map_names_every_module(package: str) -> None:
    missing = unmapped(REPO / package)
    assert not missing, f"{package}/__init__.py's map does not name: {', '.join(missing)}"


def test_the_guard_sees_a_module_left_off_the_map(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""- ``a`` one thing."""\n')
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    assert unmapped(tmp_path) == ["b"]
