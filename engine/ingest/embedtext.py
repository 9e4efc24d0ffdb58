"""What the embedding model reads of a chunk, and the key of its vector in the vault's cache.

Pure functions of a chunk's stored fields, so that every place that needs a
chunk's vector again (the writer, the vector-store rebuild, the ranking's
look-up in the embedding cache) finds the same one.
"""

from __future__ import annotations

import hashlib

from engine.recall.embedview import embed_view


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_text(title: str, heading: str, kind: str, text: str) -> str:
    """What the model sees for a chunk: its title and heading path give it context
    (a transcript chunk needs none; of a tool call, see ``engine.recall.embedview``).
    A chunk that opens with its title (a document's first chunk, most often) is not
    given it twice: the model would pay for the same words again (SciFact: 5% of the
    word pieces of a corpus). Stores written before keep their vectors; the vault's
    embedding cache no longer matches those chunks, so a vector rebuild re-embeds them."""
    if kind in ("turn", "turn_pair", "thinking", "tool"):
        return embed_view(kind, text)
    if title and not heading and _opens_with(text, title):
        title = ""
    head = " > ".join(p for p in (title, heading) if p)
    return f"{head}\n{text}" if head else text


def _opens_with(text: str, title: str) -> bool:
    """Whether ``text`` starts with ``title`` as whole words, markdown marks aside."""
    body, want = text.lstrip("#*= \t\r\n"), title.strip().lstrip("#*= ")
    if not want or not body.startswith(want):
        return False
    rest = body[len(want):len(want) + 1]
    return not rest or not (rest.isalnum() or rest == "_")


def cache_key(model: str, text: str) -> str:
    """Key of a vector in the vault's embedding cache: model name and exact input text."""
    return content_hash(model + "\0" + text)
