"""The tree's boundaries, read with ast (nothing is imported): ipc/ and desktop/ reach the
engine only through ``engine``'s public face, ipc/ never imports desktop/, desktop/ never
imports the CLI's or MCP's own packages, only the window imports panels, no two
modules of ipc/ or desktop/ import each other (at any depth, function-level included), and
no module of engine/, ipc/ or desktop/ uses another's private (``_``) names."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.test_layers import cycles

REPO = Path(__file__).resolve().parents[1]
CLIENTS = ("ipc", "desktop")


def _imports(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name imported) of every import in ``path``, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # the name may be a module ("from . import b") or not
                yield node.lineno, f"{base}.{alias.name}"


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def boundary_errors(root: Path) -> list[str]:
    """Imports of engine internals from ipc/ or desktop/, and of desktop/ from ipc/."""
    public = _public_names(root)
    errors = []
    for module, path in _modules(root, CLIENTS).items():
        where = f"{path.relative_to(root)}"
        for line, name in _imports(path, module):
            head, _, rest = name.partition(".")
            first = rest.split(".")[0]
            if head == "engine" and first and first not in public:
                errors.append(f"{where}:{line} imports engine.{first}: "
                              "use `from engine import ...`")
            if module.startswith("ipc") and head == "desktop":
                errors.append(f"{where}:{line} imports desktop: ipc/ sits below desktop/")
    return sorted(errors)


# Within the front ends: the app never imports the CLI's or MCP's own packages (what both use,
# as the login item, sits in ipc/ itself), and only the window places panels: dialogs and
# the pieces below them (desktop/widgets.py) never import one.
FRONT_ENDS_OWN = ("ipc.cli", "ipc.mcp")
PLACES_PANELS = ("desktop.main_window", "desktop.pages")


def front_end_errors(root: Path) -> list[str]:
    """desktop/ imports of ipc/cli or ipc/mcp, and imports of desktop/panels from below."""
    errors = []
    for module, path in _modules(root, ("desktop",)).items():
        where = f"{path.relative_to(root)}"
        for line, name in _imports(path, module):
            own = next((p for p in FRONT_ENDS_OWN if name == p or name.startswith(p + ".")), None)
            if own:
                errors.append(f"{where}:{line} imports {own}: the CLI's and MCP's own; "
                              "what both front ends use sits in ipc/")
            if (name.startswith("desktop.panels.") and not module.startswith("desktop.panels")
                    and module not in PLACES_PANELS):
                errors.append(f"{where}:{line} imports desktop.panels: only the window "
                              "places panels (shared pieces: desktop/widgets.py)")
    return sorted(set(errors))  # one line per import, however many names it takes


def _public_names(root: Path) -> set[str]:
    """What engine/__init__.py's ``__all__`` lists (read, not imported)."""
    tree = ast.parse((root / "engine" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {ast.literal_eval(e) for e in node.value.elts}  # type: ignore[attr-defined]
    return set()


def client_graph(root: Path) -> dict[str, set[str]]:
    """ipc/ and desktop/ module -> the ipc/ and desktop/ modules it imports."""
    modules = _modules(root, CLIENTS)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, set())
        for _, name in _imports(path, module):
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in modules and name != module and "." in name:  # not a package's face
                edges.add(name)
    return graph


def test_ipc_and_desktop_import_only_the_engines_public_face() -> None:
    errors = boundary_errors(REPO)
    assert not errors, "imports past the engine's public face:\n" + "\n".join(errors)


def test_the_app_imports_no_cli_and_nothing_below_the_window_imports_a_panel() -> None:
    errors = front_end_errors(REPO)
    assert not errors, "imports across or up the front ends:\n" + "\n".join(errors)


def test_the_guard_sees_a_dialog_importing_a_panel_and_the_app_importing_the_cli(
        tmp_path: Path) -> None:
    for pkg in ("desktop", "desktop/panels", "desktop/dialogs"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "desktop" / "main_window.py").write_text("from desktop.panels.health import P\n")
    (tmp_path / "desktop" / "panels" / "health.py").write_text("from desktop.widgets import W\n")
    (tmp_path / "desktop" / "dialogs" / "unlock.py").write_text(
        "from desktop.widgets import W\ndef f():\n    from desktop.panels.widgets import W\n")
    (tmp_path / "desktop" / "widgets.py").write_text(
        "def f():\n    from ipc.cli.login_item import Autostart\n")
    assert front_end_errors(tmp_path) == [
        ("desktop/dialogs/unlock.py:3 imports desktop.panels: only the window places panels "
        "(shared pieces: desktop/widgets.py)"),
        ("desktop/widgets.py:2 imports ipc.cli: the CLI's and MCP's own; what both front "
        "ends use sits in ipc/")]


def test_the_app_loads_no_module_by_name() -> None:
    """desktop/ imports its modules with import statements, never by a string (importlib,
    find_spec, __import__), so the graph these tests read is the one that runs."""
    found = []
    for module, path in _modules(REPO, ("desktop",)).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "importlib" for n in names) or (
                    isinstance(node, ast.Name) and node.id == "__import__"):
                assert isinstance(node, (ast.stmt, ast.expr))  # an import or a name: a line
                found.append(f"{path.relative_to(REPO)}:{node.lineno} ({module})")
    assert not found, "modules loaded by name:\n" + "\n".join(found)


def test_no_import_cycle_in_ipc_or_desktop() -> None:
    found = cycles(client_graph(REPO))
    assert not found, "modules that import each other: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_guard_sees_an_engine_internal_a_desktop_import_and_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text('__all__ = ["ContextEngine"]\n')
    for pkg in ("ipc", "desktop"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "ipc" / "a.py").write_text(
        "from engine import ContextEngine\nfrom engine.facade import ContextEngine\n"
        "def f():\n    import desktop.app\n    from . import b\n")
    (tmp_path / "ipc" / "b.py").write_text("from ipc import a\n")
    (tmp_path / "desktop" / "app.py").write_text("from engine.api import Payload\n")
    assert boundary_errors(tmp_path) == [
        "desktop/app.py:1 imports engine.api: use `from engine import ...`",
        "ipc/a.py:2 imports engine.facade: use `from engine import ...`",
        "ipc/a.py:4 imports desktop: ipc/ sits below desktop/"]
    assert cycles(client_graph(tmp_path)) == [["ipc.a", "ipc.b"]]


def test_watching_folders_is_the_engines_work() -> None:
    """ipc/ is the wire and its front ends, desktop/ the app: neither follows folders on
    disk itself (the engine does: ``ContextEngine.watch``, engine/watching/)."""
    found = []
    for pkg in ("ipc", "desktop"):
        for path in sorted((REPO / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                found += [f"{path.relative_to(REPO)}: {n}" for n in names
                          if n.split(".")[0] == "watchdog"]
    assert not found, "folder watching outside the engine:\n" + "\n".join(found)


PROJECT = ("engine", "ipc", "desktop")


def private_uses(root: Path) -> list[str]:
    """Where a module of engine/, ipc/ or desktop/ reaches another's private name: ``from
    m import _name``, or ``_name`` read off a name imported from the project (``m._name``).
    A name used by another module is not private: drop the underscore, or keep it home."""
    found = []
    for module, path in _modules(root, PROJECT).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported: set[str] = set()  # local names bound to something of the project
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {a.asname or a.name.split(".")[0] for a in node.names
                             if a.name.split(".")[0] in PROJECT}
            elif isinstance(node, ast.ImportFrom):
                source = node.module or package
                if not node.level and source.split(".")[0] not in PROJECT:
                    continue
                for alias in node.names:
                    imported.add(alias.asname or alias.name)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}:{node.lineno} imports "
                                     f"{source}.{alias.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                found.append(f"{path.relative_to(root)}:{node.lineno} reads "
                             f"{node.value.id}.{node.attr}")
    return sorted(found)


def test_no_module_reaches_another_modules_private_names() -> None:
    found = private_uses(REPO)
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_guard_sees_a_private_name_imported_or_read(tmp_path: Path) -> None:
    (tmp_path / "engine" / "packing").mkdir(parents=True)
    for pkg in ("ipc", "desktop"):
        (tmp_path / pkg).mkdir()
    (tmp_path / "engine" / "packing" / "packer.py").write_text(
        "import os\nfrom engine.ingest import chunking\nfrom engine.ingest.chunking import _Piece"
        "\nfrom . import _render\n\n\nclass _Packer:\n    pass\n\n\n"
        "def f():\n    os._exit(0)\n    return chunking._trim(_Packer())\n")
    assert private_uses(tmp_path) == [
        "engine/packing/packer.py:13 reads chunking._trim",
        "engine/packing/packer.py:3 imports engine.ingest.chunking._Piece",
        "engine/packing/packer.py:4 imports engine.packing._render"]
