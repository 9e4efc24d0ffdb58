"""Paths that share a stored source: identical content is embedded and stored once.

When a file's content is already stored as another ready source of the same
kind and format, its path becomes an alias of that source instead of a second
copy (chunks, vectors, FTS rows). Deleting a path removes just that path: an
alias row goes; a source's own path hands the source over to one of its
aliases ("promotion") and only the last path takes the source with it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from engine.store.vault.core import Vault


def twin(vault: Vault, content_hash: str, kind: str, fmt: str, uri: str) -> int | None:
    """A ready source, stored under another uri, with exactly this content; else None."""
    row = vault._query(
        "SELECT id FROM sources WHERE content_hash = ? AND state = 'ready' AND kind = ? "
        "AND fmt = ? AND uri != ? ORDER BY id LIMIT 1", (content_hash, kind, fmt, uri))
    return int(row[0][0]) if row else None


def target(vault: Vault, uri: str) -> tuple[int, str] | None:
    """(source id, content hash) that the alias ``uri`` points at; None when not an alias."""
    row = vault._query(
        "SELECT a.source_id, s.content_hash FROM source_aliases a JOIN sources s "
        "ON s.id = a.source_id WHERE a.uri = ? AND s.state = 'ready'", (uri,))
    return (int(row[0][0]), str(row[0][1])) if row else None


def attach(vault: Vault, uri: str, source_id: int, created_at: float | None,
           retire: Sequence[int] = ()) -> list[int]:
    """Make ``uri`` an alias of ``source_id``; its own former versions (``retire``) are
    handed to their other paths or deleted. Returns the ids deleted (vectors to drop)."""
    with vault.write() as c:
        deleted = _retire(c, retire)
        c.execute("INSERT OR REPLACE INTO source_aliases VALUES (?, ?, ?, ?)",
                  (uri, source_id, created_at, time.time()))
    return deleted


def keep_aliased(vault: Vault, source_ids: Sequence[int]) -> list[int]:
    """Hand each source that has aliases to its oldest alias (the alias becomes its
    uri); returns the ids so kept. The others are left for the caller to delete."""
    if not source_ids:
        return []
    with vault.write(chunks=False) as c:
        return [sid for sid in source_ids if _promote(c, sid)]


def drop(vault: Vault, uris: Sequence[str]) -> int:
    """Remove these alias paths (a path that now has its own source, or a delete)."""
    if not uris:
        return 0
    with vault.write(chunks=False) as c:
        return sum(c.execute("DELETE FROM source_aliases WHERE uri = ?", (u,)).rowcount
                   for u in uris)


def matching(vault: Vault, uris: Sequence[str], folder: str | None) -> list[str]:
    """Alias paths equal to one of ``uris``, or else under ``folder`` (ends with "/")."""
    for uri in uris:
        if vault._query("SELECT 1 FROM source_aliases WHERE uri = ?", (uri,)):
            return [uri]
    if folder is None:
        return []
    return [r[0] for r in vault._query(
        "SELECT uri FROM source_aliases WHERE substr(uri, 1, ?) = ? ORDER BY uri",
        (len(folder), folder))]


def _promote(c: Any, source_id: int) -> bool:
    row = c.execute("SELECT uri FROM source_aliases WHERE source_id = ? "
                    "ORDER BY added, uri LIMIT 1", (source_id,)).fetchone()
    if row is None:
        return False
    c.execute("DELETE FROM source_aliases WHERE uri = ?", (row[0],))
    c.execute("UPDATE sources SET uri = ? WHERE id = ?", (row[0], source_id))
    return True


def retire_versions(c: Any, source_ids: Sequence[int]) -> list[int]:
    """Within a write (``c``): hand each of these replaced versions to its oldest alias,
    or delete it (vectors tombstoned); returns the ids deleted."""
    return _retire(c, source_ids)


def _retire(c: Any, source_ids: Sequence[int]) -> list[int]:
    deleted: list[int] = []
    for sid in source_ids:
        if not _promote(c, sid):
            c.execute("INSERT OR IGNORE INTO vector_tombstones VALUES (?, ?)", (sid, time.time()))
            c.execute("DELETE FROM sources WHERE id = ?", (sid,))
            deleted.append(sid)
    return deleted
