"""Where a hit or a payload item is, as a person reads it: ``pkg/server.py:12-40``.

Shared by `ctx search`, `ctx build`'s item list, `ctx recall` and the MCP tools, so
every surface names a file the same way: its path relative to the folder it was
ingested from (``path``; absolute when no root was recorded) and its lines.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lines_text", "place"]


def lines_text(lines: tuple[int, int] | None) -> str:
    """``12-40`` (``12`` for one line); "" when unknown."""
    if not lines:
        return ""
    first, last = lines
    return str(first) if first == last else f"{first}-{last}"


def place(item: Any) -> str:
    """``path:first-last`` of a SearchHit, RecallHit, PayloadItem or BuildItem from a
    file; its title (else its source) for anything else."""
    path = getattr(item, "path", "") or ""
    if not path:
        return str(getattr(item, "title", "") or getattr(item, "source", ""))
    span = lines_text(getattr(item, "lines", None))
    return f"{path}:{span}" if span else path
