"""Read docs/wire.md's tables and render ipc.wire's schemas in the doc's words.

Shared by the wire doc tests: the doc is the contract, so each parameter row,
limit and error code in it is compared with what the server enforces.
"""

from __future__ import annotations

import re

from engine.errors import InvalidInput
from ipc.schema import Field

_TYPES = {"str": "str", "int": "int", "number": "number", "bool": "bool", "object": "object",
          "date": "date", "any": "any"}


def num(x: float | None) -> str:
    """A bound as the doc writes it: 0, 1000, 1e11."""
    if x is None:
        return "any"
    if float(x).is_integer():
        return f"{float(x):.0e}".replace("e+", "e") if abs(x) >= 1e9 else str(int(x))
    return repr(x)


def _type(f: Field) -> str:
    if f.kind == "list":
        return f"list[{_type(f.items) if f.items is not None else 'any'}]"
    return _TYPES[f.kind]


def render(f: Field) -> str:
    """The doc's schema text for one parameter, e.g. ``int; 1..1000``."""
    parts = [_type(f) + (" or null" if f.nullable else "")]
    if f.required:
        parts.append("required")
    if f.kind in ("int", "number") and (f.lo is not None or f.hi is not None):
        parts.append(f"{num(f.lo)}..{num(f.hi)}")
    if f.kind == "str":
        if f.min_len and f.max_len is not None:
            parts.append(f"length {f.min_len}..{f.max_len}")
        elif f.max_len is not None:
            parts.append(f"length <= {f.max_len}")
        elif f.min_len:
            parts.append(f"length >= {f.min_len}")
    if f.choices is not None:
        parts.append("one of " + ", ".join(f"`{c}`" for c in f.choices))
    if f.kind == "list":
        if f.max_len is not None:
            parts.append(f"at most {f.max_len}")
        item = f.items
        if item is not None and item.kind == "str" and (item.min_len or item.max_len):
            parts.append(f"each {render(item).split('; ', 1)[1]}")
    if f.error is not InvalidInput:
        parts.append(f"error `{f.error.name}` ({f.error.code})")
    if f.len_error is not None and f.len_error is not f.error:
        parts.append(f"too many: `{f.len_error.name}` ({f.len_error.code})")
    return "; ".join(parts)


def section(doc: str, title: str) -> str:
    """The text of the ``## N. title`` section."""
    match = re.search(rf"^## \d+\. {re.escape(title)}\n(.*?)(?=^## |\Z)", doc, re.MULTILINE | re.DOTALL)
    assert match is not None, title
    return match.group(1)


def table_rows(text: str, header: str) -> list[list[str]]:
    """Cells of the markdown table whose header row starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def strip_note(text: str) -> str:
    """Schema text without a trailing ``(explanation)``; an error code ``(1004)`` stays."""
    return re.sub(r"\s+\((?!\d+\))[^()]*\)$", "", text)


def param_rows(doc: str) -> dict[tuple[str, str], str]:
    """(method, parameter) -> schema text, from the parameter table of section 10."""
    out: dict[tuple[str, str], str] = {}
    method = ""
    for cells in table_rows(section(doc, "Methods"), "| method | parameter |"):
        method = cells[0].strip("`") or method
        for name in re.findall(r"`([a-z_]+)`", cells[1]):
            out[(method, name)] = strip_note(cells[2])
    return out


def field_rows(doc: str, header: str) -> dict[str, str]:
    """field -> schema text from a two-column field table (live items, turns)."""
    return {cells[0].strip("`"): strip_note(cells[1])
            for cells in table_rows(section(doc, "Methods"), header)}


def limit_rows(doc: str) -> dict[str, int | float]:
    """name -> value from the table of section "Limits"."""
    out: dict[str, int | float] = {}
    for cells in table_rows(section(doc, "Limits"), "| limit |"):
        value = cells[1].replace(",", "")
        out[cells[0].strip("`")] = float(value) if "." in value else int(value)
    return out


def error_rows(doc: str) -> dict[int, str]:
    """code -> name from the error table of section "Error codes"."""
    rows = table_rows(section(doc, "Error codes"), "| code | name |")
    return {int(c[0]): c[1].strip("`") for c in rows}
