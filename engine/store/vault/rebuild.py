"""What a rebuild of the vector index reads from the vault and clears in it.

The vector index is rebuilt from the vault alone: every chunk's embedding input
(its source title, heading, kind and text) is read in pages of ascending chunk id,
and once the index is whole again the records of vectors still owed a deletion
are cleared. A repair also rebuilds the keyword (FTS5) indexes.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.store.vault.core import Vault
from engine.store.vault.migrations import RECALL_FTS_KINDS


class EmbedInput(NamedTuple):
    """A chunk's id and the parts of the text its vector was made from."""

    id: int
    title: str
    heading: str
    kind: str
    text: str


def embed_inputs(vault: Vault, after: int, limit: int, *, ready_only: bool = True
                 ) -> list[EmbedInput]:
    """Up to ``limit`` chunks with an id above ``after``, ascending (a page of a scan
    of the store); ``ready_only`` leaves out sources not ready (written or deleted now)
    and those still waiting for the vector stage (it makes their vectors)."""
    ready = "s.state = 'ready' AND s.embedded = 1 AND " if ready_only else ""
    rows = vault._query(
        "SELECT c.id, s.title, c.heading, c.kind, c.text FROM chunks c "
        f"JOIN sources s ON s.id = c.source_id WHERE {ready}c.id > ? "
        "ORDER BY c.id LIMIT ?", (after, limit))
    return [EmbedInput(*r) for r in rows]


def embed_inputs_of(vault: Vault, chunk_ids: list[int]) -> list[EmbedInput]:
    """The embedding inputs of these chunks (those that exist), 900 a query."""
    out: list[EmbedInput] = []
    for i in range(0, len(chunk_ids), 900):
        part = chunk_ids[i:i + 900]
        out += [EmbedInput(*r) for r in vault._query(
            "SELECT c.id, s.title, c.heading, c.kind, c.text FROM chunks c JOIN sources s "
            f"ON s.id = c.source_id WHERE c.id IN ({','.join('?' * len(part))})", part)]
    return out


def embed_input(vault: Vault, chunk_id: int) -> EmbedInput:
    """One chunk's embedding input."""
    r = vault._query("SELECT c.id, s.title, c.heading, c.kind, c.text FROM chunks c "
                     "JOIN sources s ON s.id = c.source_id WHERE c.id = ?", (chunk_id,))[0]
    return EmbedInput(*r)


def clear_vector_debts(vault: Vault) -> None:
    """Forget every deleted source's and chunk's vector still owed a deletion: after a
    rebuild from the vault, the index holds none of them."""
    with vault.write(chunks=False) as c:
        c.execute("DELETE FROM vector_dead")
        c.execute("DELETE FROM vector_tombstones")


def rebuild_keyword_index(vault: Vault) -> None:
    """Rebuild the FTS5 keyword indexes from the chunks table: chunks_fts, and recall_fts
    from its kinds' chunks alone (its own 'rebuild' would index every chunk)."""
    with vault.write() as c:
        c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        c.execute("INSERT INTO recall_fts(recall_fts) VALUES ('delete-all')")
        c.execute("INSERT INTO recall_fts(rowid, text, heading) SELECT id, text, heading "
                  f"FROM chunks WHERE kind IN ({','.join('?' * len(RECALL_FTS_KINDS))})",
                  RECALL_FTS_KINDS)
