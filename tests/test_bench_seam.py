"""bench/ reaches the engine through one seam: ``engine`` (the public face) and
``engine.lab`` (what benchmarks measure behind it, with its map). Any other engine import
in bench/, at any depth, fails here; so does a lab name that no longer resolves, or a
product module that leans on the lab. (tests/test_bench_imports.py imports every bench
module.)"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEAM = ("engine", "engine.lab")


def engine_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, engine module) for every import of an engine module in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module]
            if node.module == "engine":  # ``from engine import lab`` is the seam too
                modules = ["engine.lab" if a.name == "lab" else "engine" for a in node.names]
        else:
            continue
        for module in modules:
            if module == "engine" or module.startswith("engine."):
                yield node.lineno, module


def off_the_seam(root: Path) -> list[str]:
    """bench/ imports of engine modules other than ``engine`` and ``engine.lab``."""
    return [f"{path.relative_to(root)}:{line}: {module}"
            for path in sorted((root / "bench").rglob("*.py"))
            for line, module in engine_imports(path) if module not in SEAM]


def test_bench_imports_only_the_face_and_the_lab() -> None:
    found = off_the_seam(REPO)
    assert not found, ("bench/ imports engine internals; add the name to engine/lab.py "
                       "(with a line in its map) and import it from there:\n"
                       + "\n".join(found))


def test_the_seam_guard_sees_an_internal_import(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.py").write_text(
        "from engine import ContextEngine\nfrom engine.lab import run_lanes\n"
        "from engine import lab\n\n\ndef run():\n"
        "    from engine.flows.search.lanes import run_lanes\n"
        "    import engine.store.vault.core as core\n")
    assert off_the_seam(tmp_path) == ["bench/b.py:7: engine.flows.search.lanes",
                                      "bench/b.py:8: engine.store.vault.core"]


def _type_checking_names(path: Path) -> dict[str, tuple[str, str]]:
    """Name -> (module, attribute or '' for a module) of the ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING")
    out: dict[str, tuple[str, str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            name = alias.asname or alias.name
            package = importlib.import_module(node.module)
            if hasattr(package, "__path__") and importlib.util.find_spec(
                    f"{node.module}.{alias.name}") is not None:
                out[name] = (f"{node.module}.{alias.name}", "")
            else:
                out[name] = (node.module, alias.name)
    return out


def test_the_lab_types_what_it_serves() -> None:
    """Its TYPE_CHECKING block (what mypy and an IDE see) names exactly the lazy map, each
    name from the same place, and every name resolves at run time."""
    from engine import lab

    where = {}
    for name, spec in lab._WHERE.items():
        module, colon, attr = spec.partition(":")
        where[name] = (module, "" if colon and not attr else attr or name)
    assert _type_checking_names(REPO / "engine" / "lab.py") == where
    assert sorted(lab.__all__) == sorted(where)
    for name, (module, attr) in where.items():
        loaded = importlib.import_module(module)
        assert getattr(lab, name) is (getattr(loaded, attr) if attr else loaded), name


def test_the_lab_names_nothing_the_face_already_offers() -> None:
    import engine
    from engine import lab

    assert not set(lab.__all__) & set(engine.__all__)


def test_no_product_module_imports_the_lab() -> None:
    found = [f"{path.relative_to(REPO)}:{line}"
             for top in ("engine", "ipc", "desktop", "packaging")
             for path in sorted((REPO / top).rglob("*.py"))
             for line, module in engine_imports(path) if module == "engine.lab"]
    assert not found, "the lab is bench/'s seam only: " + ", ".join(found)
