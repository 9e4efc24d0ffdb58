"""Transcript sync state in the vault: per file, what the last sync read.

A transcript file is stored as segments, one source per sync that found
something new (``transcript:<path>#<offset>``). Its sync state (offsets and the
parser's state, which holds user text) lives in the encrypted vault, in
``recall_files``, as JSON the recall part reads and writes.
"""

from __future__ import annotations

import json
from typing import Any

from engine.store.vault.core import Vault


def sync_states(vault: Vault) -> dict[str, Any]:
    """Every synced file's recorded state: path -> the JSON value stored for it."""
    return {path: json.loads(raw)
            for path, raw in vault._query("SELECT path, state FROM recall_files")}


def save_sync_state(vault: Vault, path: str, state: dict[str, Any], *,
                    replaces: str | None = None) -> None:
    """Record (or replace) one file's sync state; ``replaces``: a row to remove with it
    (the state kept under a keyed name since the file's delete)."""
    with vault.write() as c:
        c.execute("INSERT OR REPLACE INTO recall_files VALUES (?, ?)",
                  (path, json.dumps(state)))
        if replaces is not None:
            c.execute("DELETE FROM recall_files WHERE path = ?", (replaces,))


def segment_ids(vault: Vault, prefix: str) -> list[int]:
    """Ids of the sources whose uri starts with ``prefix`` (a file's segments), in
    whatever state (a sync may drop a segment a crash left pending)."""
    return [r[0] for r in vault._query(
        "SELECT id FROM sources WHERE substr(uri, 1, ?) = ?", (len(prefix), prefix))]


def segment_chunks(vault: Vault, prefix: str) -> int:
    """Chunks stored so far under the segments whose uri starts with ``prefix``: the
    ordinal the next segment of that file starts at."""
    return int(vault._query(
        "SELECT COALESCE(sum(n_chunks), 0) FROM sources WHERE substr(uri, 1, ?) = ?",
        (len(prefix), prefix))[0][0])
