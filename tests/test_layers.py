"""engine/'s layers: imports run only downward, and no two engine modules import each other;
and each package's docstring maps every module in it (the end of this file).

The imports are read with ast (module-level and function-level, TYPE_CHECKING
blocks included); nothing is imported. Layers, lowest first: base, parts,
config (only gathers the parts' sections), flows (orchestration), facade.
Inside flows, the rooms (one sub-package per part orchestrated) import each other only
down a declared order (``ROOMS``, below the maps).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine"

LAYERS = ("base", "parts", "config", "flows", "facade")

# Every package or module directly under engine/, and its layer.
LAYER_OF = {
    "errors": "base", "types": "base", "api": "base", "paths": "base", "pathnames": "base",
    "blas": "base", "metrics": "base", "config_base": "base", "tokens": "base",
    "offline": "base", "calls": "base", "events": "base", "protocol": "base", "pools": "base",
    "limits": "base", "lazy": "base",
    "crypto": "parts", "embedding": "parts", "store": "parts", "ingest": "parts",
    "retrieval": "parts", "packing": "parts", "surrogates": "parts", "recall": "parts",
    "access": "parts", "backup": "parts", "watching": "parts",
    "config": "config",
    "flows": "flows",
    "facade": "facade", "__init__": "facade", "lab": "facade",
}


def engine_modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the engine package under ``root``."""
    out = {}
    for path in sorted((root / "engine").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def unit_of(module: str) -> str:
    """The package or module directly under engine/ that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(name: str, modules: dict[str, Path]) -> str:
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, engine module imported) for every import in ``path``, at any depth."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "engine" or name.startswith("engine."):
                yield node.lineno, _resolve(name, modules)


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Importing module -> {imported engine module: line of the first such import}."""
    modules = engine_modules(root)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for line, target in imports_of(module, path, modules):
            if target != module:
                edges.setdefault(target, line)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_errors(root: Path) -> list[str]:
    errors = []
    for module, edges in import_graph(root).items():
        here = LAYER_OF.get(unit_of(module))
        for target, line in edges.items():
            there = LAYER_OF.get(unit_of(target))
            if here and there and LAYERS.index(there) > LAYERS.index(here):
                errors.append(f"{module.replace('.', '/')}.py:{line} imports {target}: "
                              f"layer {here!r} may not import from the higher layer {there!r}")
    return errors


def test_every_engine_module_has_a_layer() -> None:
    unplaced = sorted({unit_of(m) for m in engine_modules(REPO)} - set(LAYER_OF))
    assert not unplaced, f"engine/ holds packages or modules with no layer in LAYER_OF: {unplaced}"


def test_imports_run_only_downward() -> None:
    errors = layer_errors(REPO)
    assert not errors, "imports running up a layer:\n" + "\n".join(errors)


def test_no_import_cycle_between_engine_modules() -> None:
    graph = {m: set(edges) for m, edges in import_graph(REPO).items()}
    found = cycles(graph)
    assert not found, "engine modules that import each other: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_no_import_cycle_between_engine_packages() -> None:
    units: dict[str, set[str]] = {}
    for module, edges in import_graph(REPO).items():
        units.setdefault(unit_of(module), set()).update(
            unit_of(t) for t in edges if unit_of(t) != unit_of(module))
    found = cycles(units)
    assert not found, "engine packages that import each other: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_guard_sees_an_upward_and_a_circular_import(tmp_path: Path) -> None:
    """The checks above read real imports: a part importing engine.config, and two
    modules importing each other (one inside a function), are both caught."""
    pkg = tmp_path / "engine"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "__init__.py").write_text("")
    (pkg / "config.py").write_text("from engine.store.a import A\n")
    (pkg / "store" / "a.py").write_text("from engine.config import Config\nA = 1\n")
    (pkg / "store" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "store" / "c.py").write_text("from engine.store import b\n")
    assert layer_errors(tmp_path) == [("engine/store/a.py:1 imports engine.config: "
                                       "layer 'parts' may not import from the higher layer 'config'")]
    graph = {m: set(e) for m, e in import_graph(tmp_path).items()}
    assert cycles(graph) == [["engine.config", "engine.store.a"],
                             ["engine.store.b", "engine.store.c"]]


# Each package's docstring is its map: it names every module in it (as ``name`` or
# ``name.thing``), so a new module is placed where a reader looks first.
MAPPED = ("engine/api", "engine/store", "engine/store/vault", "engine/store/vectors",
          "engine/flows", "engine/flows/search", "engine/flows/ingest", "engine/flows/recall",
          "engine/flows/keeping", "engine/facade", "engine/backup", "engine/crypto",
          "engine/embedding", "engine/recall",
          "engine/watching", "engine/retrieval", "engine/packing", "engine/ingest", "bench")


def unmapped(package: Path) -> list[str]:
    """The modules of ``package`` its ``__init__`` docstring does not name."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""
    named = set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)(?:\.[^`]*)?``", doc))  # a, a.name
    return sorted(p.stem for p in package.glob("*.py")
                  if p.stem != "__init__" and p.stem not in named)


@pytest.mark.parametrize("package", MAPPED)
def test_the_map_names_every_module(package: str) -> None:
    missing = unmapped(REPO / package)
    assert not missing, (f"{package}/__init__.py's map does not name: {', '.join(missing)} "
                         "(add a line for each)")


def test_the_map_guard_sees_a_module_left_off(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""- ``a`` one thing."""\n')
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    assert unmapped(tmp_path) == ["b"]


# The rooms of engine/flows/: part X is pure (engine/X), flows/X orchestrates it, the facade
# exposes it. Each sub-package of flows/ is a room named after the part it orchestrates, or
# listed here with the parts it orchestrates. Rooms import each other only down this order
# (a room may import the rooms listed before it), and the modules at the top of flows/ (what
# every room shares: runtime, opening, job, jobs, warming, audit_log) import no room.
ROOMS = {
    "ingest": ("ingest", "watching"),
    "search": ("retrieval", "packing"),
    "recall": ("recall",),
    "keeping": ("backup", "crypto"),
}


def room_of(module: str, rooms: set[str]) -> str | None:
    """The room of flows/ that ``module`` belongs to; None for the top of flows/."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in rooms else None


def room_errors(root: Path) -> list[str]:
    flows = root / "engine" / "flows"
    rooms = {p.parent.name for p in flows.glob("*/__init__.py")}
    errors = [f"engine/flows/{r}/ is a room named after no part and not listed in ROOMS"
              for r in sorted(rooms - set(ROOMS))]
    order = list(ROOMS)
    for module, edges in import_graph(root).items():
        if unit_of(module) != "flows":
            continue
        here = room_of(module, rooms)
        for target, line in edges.items():
            there = room_of(target, rooms) if unit_of(target) == "flows" else None
            if there is None or there == here:
                continue
            where = f"{module.replace('.', '/')}.py:{line} imports {target}"
            if here is None:
                errors.append(f"{where}: the top of flows/ may not import a room")
            elif there not in order or here not in order or order.index(there) > order.index(here):
                errors.append(f"{where}: room {here!r} may import only rooms before it "
                              f"({' -> '.join(order)})")
    return errors


def test_every_room_orchestrates_parts() -> None:
    """A room names the parts it orchestrates, and each is a part of engine/."""
    for room, parts in ROOMS.items():
        assert parts, room
        for part in parts:
            assert LAYER_OF.get(part) == "parts", f"ROOMS[{room!r}] names {part!r}, not a part"


# The facade's member that exposes each room (engine/facade/<member>.py).
FACADE_OF = {"ingest": "ingest", "search": "reading", "recall": "recall", "keeping": "keeping"}


def unexposed(root: Path) -> list[str]:
    """Rooms whose facade member is missing or imports nothing from the room."""
    graph = import_graph(root)
    out = []
    for room, member in FACADE_OF.items():
        edges = graph.get(f"engine.facade.{member}", {})
        if not any(t == f"engine.flows.{room}" or t.startswith(f"engine.flows.{room}.")
                   for t in edges):
            out.append(f"flows/{room}/ has no facade member engine/facade/{member}.py using it")
    return out


def test_the_facade_exposes_every_room() -> None:
    assert set(FACADE_OF) == set(ROOMS)
    missing = unexposed(REPO)
    assert not missing, "\n".join(missing)


def test_rooms_import_only_down_their_order() -> None:
    errors = room_errors(REPO)
    assert not errors, "rooms of engine/flows/ out of their order:\n" + "\n".join(errors)


def test_the_room_guard_sees_a_wrong_import(tmp_path: Path) -> None:
    """A room importing a later room, the top of flows/ importing a room, and a room that
    is in no list are all caught."""
    flows = tmp_path / "engine" / "flows"
    for room in ("search", "recall", "misc"):
        (flows / room).mkdir(parents=True)
        (flows / room / "__init__.py").write_text("")
    (tmp_path / "engine" / "__init__.py").write_text("")
    (flows / "__init__.py").write_text("")
    (flows / "runtime.py").write_text("def f():\n    from engine.flows.search import a\n")
    (flows / "search" / "a.py").write_text("from engine.flows.recall.b import B\n")
    (flows / "recall" / "b.py").write_text("from engine.flows.search import a\nB = 1\n")
    assert room_errors(tmp_path) == [
        "engine/flows/misc/ is a room named after no part and not listed in ROOMS",
        ("engine/flows/runtime.py:2 imports engine.flows.search.a: the top of flows/ may "
         "not import a room"),
        ("engine/flows/search/a.py:1 imports engine.flows.recall.b: room 'search' may import "
         "only rooms before it (ingest -> search -> recall -> keeping)")]
    assert len(unexposed(tmp_path)) == len(FACADE_OF)  # no facade member uses a room


def test_engine_tests_mirror_the_packages() -> None:
    """Each folder of tests/engine/ holding tests is named after a package of engine/."""
    tests = REPO / "tests" / "engine"
    stray = sorted(str(d.relative_to(tests)) for d in tests.rglob("*")
                   if d.is_dir() and any(d.glob("test_*.py"))
                   and not (ENGINE / d.relative_to(tests) / "__init__.py").exists())
    assert not stray, f"tests/engine/ folders named after no engine/ package: {stray}"


def unmirrored_rooms(root: Path) -> list[str]:
    """Rooms of engine/flows/ with no tests/engine/flows/<room>/ folder holding tests."""
    flows = root / "engine" / "flows"
    tests = root / "tests" / "engine" / "flows"
    return [f"engine/flows/{room}/ has no tests in tests/engine/flows/{room}/"
            for room in sorted(p.parent.name for p in flows.glob("*/__init__.py"))
            if not any((tests / room).glob("test_*.py"))]


def test_every_flows_room_has_its_tests_folder() -> None:
    """The tests of a room sit in tests/engine/flows/<room>/, as the room sits in engine/flows/
    (not beside the pure part it orchestrates, nor at the top of tests/engine/)."""
    missing = unmirrored_rooms(REPO)
    assert not missing, "\n".join(missing)


def test_the_room_mirror_guard_sees_a_room_without_tests(tmp_path: Path) -> None:
    for room in ("search", "recall"):
        (tmp_path / "engine" / "flows" / room).mkdir(parents=True)
        (tmp_path / "engine" / "flows" / room / "__init__.py").write_text("")
    (tmp_path / "tests" / "engine" / "flows" / "search").mkdir(parents=True)
    (tmp_path / "tests" / "engine" / "flows" / "search" / "test_plan.py").write_text("")
    (tmp_path / "tests" / "engine" / "flows" / "recall").mkdir()  # a folder, but no tests
    assert unmirrored_rooms(tmp_path) == [
        "engine/flows/recall/ has no tests in tests/engine/flows/recall/"]
