"""Find each payload item's own block in a text-format context (for the item preview).

The engine returns the context string and its items in the same order; in the
text format every item starts with a header line ``[label · ...] title``. This
walks the context once, matching items to header lines in order. Where an item
cannot be placed (another format, an unusual title) its block is "".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine import PayloadItem

_SECTION = re.compile(r"\n*=== [^\n]* ===\n*$")


def _label_matches(label: str, kind: str) -> bool:
    if kind == "surrogate":
        return label.startswith("summary")
    return label == kind


def _title_matches(head_title: str, title: str) -> bool:
    """The header leaves out a title equal to the source's name and shortens long ones."""
    if not title or not head_title or head_title == title:
        return True
    return title.startswith(head_title.rstrip("…").rstrip())


def _headers(context: str) -> list[tuple[int, str, str]]:
    """(offset, label, title) of every line that looks like an item header."""
    out: list[tuple[int, str, str]] = []
    pos = 0
    for line in context.splitlines(keepends=True):
        if line.startswith("[") and ("] " in line or line.rstrip("\n").endswith("]")):
            close = line.find("]")
            inner = line[1:close]
            label = inner.split(" · ", 1)[0].strip()
            title = line[close + 1:].strip()
            out.append((pos, label, title))
        pos += len(line)
    return out


def item_blocks(context: str, items: Sequence[PayloadItem]) -> list[str]:
    """The text of each item's block, in item order ("" where it cannot be found)."""
    headers = _headers(context)
    starts: list[int | None] = []
    h = 0
    for item in items:
        kind, title = item.kind, (item.title or "").strip()
        found = None
        for j in range(h, len(headers)):
            offset, label, head_title = headers[j]
            if _label_matches(label, kind) and _title_matches(head_title, title):
                found, h = offset, j + 1
                break
        starts.append(found)
    placed = sorted(s for s in starts if s is not None)
    out: list[str] = []
    for start in starts:
        if start is None:
            out.append("")
            continue
        later = [s for s in placed if s > start]
        end = later[0] if later else len(context)
        out.append(_SECTION.sub("", context[start:end]).rstrip())
    return out
