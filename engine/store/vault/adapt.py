"""What recall learned from the user's sessions, in the vault (migration 8).

``adapt_model`` holds one fitted model (``engine.retrieval.adapt.Learned``'s bytes);
``adapt_texts`` the query-side vectors of the texts a fit embedded, each under the
chunk that quotes the text (deleted with it). Deleting a transcript source drops the
model (a trigger): it may have learned from that session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from engine.store.vault.core import Vault


class PieceRow(NamedTuple):
    """A transcript chunk as the pairs read it (no source or title)."""

    id: int
    session: str
    meta: str  # JSON (its turn)
    kind: str
    failure: int
    text: str
    content_hash: str


def model(vault: Vault) -> tuple[float, bytes] | None:
    """(when it was fitted, the model's bytes), or None when there is none."""
    rows = vault._query("SELECT fitted, model FROM adapt_model WHERE id = 1")
    return (float(rows[0][0]), bytes(rows[0][1])) if rows else None


def fitted_at(vault: Vault) -> float | None:
    """When the stored model was fitted (None: none), without reading it."""
    rows = vault._query("SELECT fitted FROM adapt_model WHERE id = 1")
    return float(rows[0][0]) if rows else None


def save_model(vault: Vault, fitted: float, data: bytes) -> None:
    with vault.write(chunks=False) as c:
        c.execute("INSERT OR REPLACE INTO adapt_model VALUES (1, ?, ?)", (fitted, data))


def drop_model(vault: Vault, *, texts: bool = False) -> None:
    """Remove the model (and with ``texts`` the embedded texts' vectors too)."""
    with vault.write(chunks=False) as c:
        c.execute("DELETE FROM adapt_model")
        if texts:
            c.execute("DELETE FROM adapt_texts")


def session_count(vault: Vault) -> tuple[int, int]:
    """(sessions, transcript reply chunks) of ready sources: what a fit could read."""
    rows = vault._query(
        "SELECT count(DISTINCT c.session), coalesce(sum(c.kind = 'turn_pair'), 0) "
        "FROM chunks c JOIN sources s ON s.id = c.source_id "
        "WHERE c.session IS NOT NULL AND s.state = 'ready' AND s.embedded = 1")
    return int(rows[0][0]), int(rows[0][1])


def pieces(vault: Vault, kinds: Sequence[str]) -> list[PieceRow]:
    """Every embedded chunk of ``kinds`` (a session's) of ready sources, each session's
    in its order."""
    marks = ",".join("?" * len(kinds))
    rows = vault._query(
        "SELECT c.id, c.session, c.meta, c.kind, c.failure, c.text, c.content_hash "
        "FROM chunks c JOIN sources s ON s.id = c.source_id "
        f"WHERE c.session IS NOT NULL AND c.kind IN ({marks}) AND s.state = 'ready' "
        "AND s.embedded = 1 ORDER BY c.session, c.source_id, c.ordinal", tuple(kinds))
    return [PieceRow(*r) for r in rows]


def text_vectors(vault: Vault, keys: Sequence[tuple[int, str]]) -> dict[tuple[int, str], bytes]:
    """The stored query-side vectors of (chunk id, role) keys that have one."""
    out: dict[tuple[int, str], bytes] = {}
    ids = sorted({cid for cid, _ in keys})
    for i in range(0, len(ids), 900):
        part = ids[i:i + 900]
        for cid, role, vec in vault._query(
                "SELECT chunk_id, role, vec FROM adapt_texts "
                f"WHERE chunk_id IN ({','.join('?' * len(part))})", part):
            out[(int(cid), str(role))] = bytes(vec)
    wanted = set(keys)
    return {k: v for k, v in out.items() if k in wanted}


def save_text_vectors(vault: Vault, rows: Sequence[tuple[int, str, np.ndarray]]) -> None:
    """Store query-side vectors; a key whose chunk is gone by now is skipped."""
    if not rows:
        return
    with vault.write(chunks=False) as c:
        for cid, role, vec in rows:
            c.execute("INSERT OR REPLACE INTO adapt_texts SELECT ?, ?, ? "
                      "WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?)",
                      (cid, role, np.asarray(vec, dtype="<f4").tobytes(), cid))


def text_count(vault: Vault) -> int:
    return int(vault._query("SELECT count(*) FROM adapt_texts")[0][0])
