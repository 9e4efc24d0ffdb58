"""bench/ still imports: every bench module loads, and every name it imports from engine/
or bench/, at any depth (the many imports inside functions too), is where it says. A move
inside engine/ that forgets a benchmark fails here, not on the day the benchmark is run."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = ("engine", "bench")


def bench_modules(root: Path) -> list[str]:
    return sorted(f"bench.{p.stem}" for p in (root / "bench").glob("*.py")
                  if p.stem != "__init__")


def imported_names(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name or None) of every import of engine/ or bench/ in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    yield node.lineno, alias.name, None
        elif (isinstance(node, ast.ImportFrom) and node.module and not node.level
              and node.module.split(".")[0] in OURS):
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def missing_names(root: Path) -> list[str]:
    """Imports in bench/ naming a module or a name that is not there."""
    errors = []
    for path in sorted((root / "bench").glob("*.py")):
        for line, module, name in imported_names(path):
            where = f"{path.relative_to(root)}:{line}"
            try:
                mod = importlib.import_module(module)
            except ImportError as exc:
                errors.append(f"{where}: {module}: {exc}")
                continue
            if name is not None and not hasattr(mod, name) and not (
                    hasattr(mod, "__path__")
                    and importlib.util.find_spec(f"{module}.{name}") is not None):
                errors.append(f"{where}: {module} has no {name}")
    return errors


def test_every_bench_module_imports() -> None:
    """Each module of bench/ loads in a fresh interpreter (as ``python -m bench.x`` would)."""
    code = ("import importlib, json, sys\nbad = {}\nfor m in sys.argv[1:]:\n"
            "    try:\n        importlib.import_module(m)\n"
            "    except Exception as exc:\n        bad[m] = repr(exc)\nprint(json.dumps(bad))\n")
    done = subprocess.run([sys.executable, "-c", code, *bench_modules(REPO)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}


def test_every_name_bench_imports_is_there() -> None:
    errors = missing_names(REPO)
    assert not errors, "bench/ imports what is not there:\n" + "\n".join(errors)


def test_the_guard_sees_a_moved_name_inside_a_function(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.py").write_text(
        "from engine.store.vault.rows import Filters\n\n\ndef run():\n"
        "    from engine.store.vault.core import Vault, NoSuchThing\n"
        "    import engine.no_such_module\n")
    assert missing_names(tmp_path) == [
        "bench/b.py:5: engine.store.vault.core has no NoSuchThing",
        "bench/b.py:6: engine.no_such_module: No module named 'engine.no_such_module'"]

