"""Which coding sessions hold a word: the words only one session of a project uses.

Sessions of one project look alike (the same code, the same kind of task); a word of
the question that few sessions hold tells them apart better than a word many chunks
of one long session repeat. ``sessions_holding`` reads, for each word, the distinct
sessions whose chunks hold it (the keyword index, its FTS5 tokens), skipping a word
in more than ``max_chunks`` chunks (it tells nothing apart, and reading its rows
would cost the query its time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def sessions_holding(conn: Any, words: Sequence[str], counts: dict[str, int],
                     max_chunks: int) -> dict[str, frozenset[str]]:
    """word -> the sessions (ids) holding it, for each word held by 1..max_chunks
    chunks (``counts``: the chunk count of each word)."""
    out: dict[str, frozenset[str]] = {}
    for w in dict.fromkeys(words):
        n = counts.get(w, 0)
        if not 0 < n <= max_chunks:
            continue
        phrase = '"' + w.replace('"', '""') + '"'
        rows = conn.execute(
            "SELECT DISTINCT c.session FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
            "WHERE chunks_fts MATCH ? AND c.session IS NOT NULL", (phrase,)).fetchall()
        out[w] = frozenset(str(r[0]) for r in rows)
    return out


def session_count(conn: Any) -> int:
    """How many sessions the store's chunks belong to."""
    row = conn.execute("SELECT count(DISTINCT session) FROM chunks "
                       "WHERE session IS NOT NULL").fetchone()
    return int(row[0]) if row else 0
