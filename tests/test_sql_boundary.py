"""SQL lives only in engine/store/: nothing in engine/, ipc/ or desktop/ outside it may
hold a SQL statement or run one.

Every file is read with ast (nothing is imported). A finding is a string constant
(an f-string's literal parts included, docstrings left out) that reads as a SQL
statement, a call of ``execute``, ``executemany`` or ``executescript``, or a use of
the vault's private ``_query`` / ``_conn``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKED = ("engine", "ipc", "desktop")
STORE = REPO / "engine" / "store"

# Statements as the code writes them (upper-case keywords), not prose.
SQL = re.compile(
    r"^\s*(?:SELECT\b.*\bFROM\b|SELECT\s+(?:count|sum|max|min|COALESCE)\(|"
    r"INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b|REPLACE\s+INTO\b|UPDATE\s+\w+\s+SET\b|"
    r"DELETE\s+FROM\b|CREATE\s+(?:TABLE|INDEX|VIRTUAL|TRIGGER|UNIQUE)\b|"
    r"DROP\s+(?:TABLE|INDEX|TRIGGER)\b|ALTER\s+TABLE\b|PRAGMA\s+\w+|"
    r"WITH\s+\w+(?:\([^)]*\))?\s+AS\s*\(|BEGIN(?:\s+IMMEDIATE)?\s*$|COMMIT\s*$|VACUUM\b)",
    re.DOTALL)
RUNNERS = {"execute", "executemany", "executescript"}
PRIVATE = {"_query", "_conn"}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _text_of(node: ast.AST) -> str | None:
    """A string constant's text, or an f-string's with each value as ``?``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "?" for v in node.values)
    return None


def findings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for every SQL statement or runner in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    inside_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                      for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in RUNNERS:
            yield node.lineno, f"call of .{node.func.attr}()"
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            yield node.lineno, f"use of the vault's private .{node.attr}"
        elif isinstance(node, ast.expr) and id(node) not in docs \
                and id(node) not in inside_fstring:
            text = _text_of(node)
            if text is not None and SQL.match(text):
                yield node.lineno, f"SQL statement {text.strip()[:40]!r}"


def sql_outside_store(root: Path) -> list[str]:
    out = []
    for top in CHECKED:
        for path in sorted((root / top).rglob("*.py")):
            if (root / "engine" / "store") in path.parents:
                continue
            rel = path.relative_to(root)
            out += [f"{rel}:{line}: {what}" for line, what in sorted(findings(path))]
    return out


def test_no_sql_outside_engine_store() -> None:
    found = sql_outside_store(REPO)
    assert not found, "SQL belongs in engine/store/ behind a named function:\n" + \
        "\n".join(found)


def test_the_check_sees_each_form_of_sql(tmp_path: Path) -> None:
    """Each form the guard looks for is found, and prose or store code is not."""
    (tmp_path / "engine" / "store").mkdir(parents=True)
    (tmp_path / "ipc").mkdir()
    (tmp_path / "desktop").mkdir()
    (tmp_path / "engine" / "flows.py").write_text(
        '"""SELECT x FROM y in a docstring is prose."""\n'
        'A = "SELECT id FROM sources WHERE uri = ?"\n'
        'B = f"DELETE FROM {table} WHERE id = ?"\n'
        'C = "select what you need from the list"\n'
        'def f(c, vault):\n'
        '    c.executemany(A, [])\n'
        '    return vault._query(A)\n', encoding="utf-8")
    (tmp_path / "engine" / "store" / "rows.py").write_text(
        'def g(c):\n    return c.execute("SELECT id FROM chunks")\n', encoding="utf-8")
    (tmp_path / "desktop" / "panel.py").write_text(
        'X = "INSERT OR IGNORE INTO embed_cache VALUES (?, ?)"\n', encoding="utf-8")
    assert sql_outside_store(tmp_path) == [
        "engine/flows.py:2: SQL statement 'SELECT id FROM sources WHERE uri = ?'",
        "engine/flows.py:3: SQL statement 'DELETE FROM ? WHERE id = ?'",
        "engine/flows.py:6: call of .executemany()",
        "engine/flows.py:7: use of the vault's private ._query",
        "desktop/panel.py:1: SQL statement 'INSERT OR IGNORE INTO embed_cache VALUES'",
    ]
