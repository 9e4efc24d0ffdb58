"""``<private>...</private>`` spans: what a user marks as never to be stored.

At the bottom of the recall package, so that the parsers (which keep a tail of
the assistant's words) and the privacy pass remove spans the same way.
"""

from __future__ import annotations

import re

_PRIVATE_TAG = re.compile(r"<(/?)private\b[^>]*>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """``text`` without its ``<private>...</private>`` spans (nested spans count).

    An opening tag that is never closed hides everything after it; a stray
    closing tag is dropped.
    """
    if "<" not in text or not _PRIVATE_TAG.search(text):
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for match in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            out.append(text[pos:match.start()])
        depth = max(0, depth - 1) if match.group(1) else depth + 1
        pos = match.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)
