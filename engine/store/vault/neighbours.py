"""Chunks beside the best hits: the ready chunks of given kinds that lie within
ordinal ranges of their sources, read in one query (packing adds them to a
conversation's hits as neighbour candidates)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.store.vault.core import Vault
from engine.store.vault.rows import CHUNK_COLUMNS, ChunkRow


def chunks_in_spans(vault: Vault, spans: Mapping[int, Sequence[tuple[int, int]]],
                    kinds: Sequence[str]) -> list[ChunkRow]:
    """The ready chunks of ``kinds`` whose ordinal lies in one of the (lo, hi) ranges
    given per source id (inclusive); in no particular order."""
    where: list[str] = []
    args: list[Any] = []
    for sid, ranges in spans.items():
        for lo, hi in ranges:
            where.append("(c.source_id = ? AND c.ordinal BETWEEN ? AND ?)")
            args += [sid, lo, hi]
    if not where or not kinds:
        return []
    kinds = list(kinds)
    found = vault._query(
        f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id "
        f"WHERE s.state = 'ready' AND c.kind IN ({','.join('?' * len(kinds))}) "
        f"AND ({' OR '.join(where)})", [*kinds, *args])
    return [ChunkRow.from_row(r) for r in found]
