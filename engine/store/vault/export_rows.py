"""What an export reads from the vault: each ready source with its chunks and surrogates.

Sources come in id order, filtered by kind and project (``by_ids`` reads the other
segments of a transcript file); a source's chunks come in ordinal order with everything
a later import needs to store them as they were.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from engine.api import SourceInfo
from engine.store.vault.core import Vault
from engine.store.vault.rows import id_batches, where_equal
from engine.store.vault.sources import SOURCE_COLUMNS


class ExportSource(NamedTuple):
    """A ready source to export: as ``sources.list_ready`` lists it, and its meta."""

    info: SourceInfo
    meta: dict[str, Any]


# A chunk as an export writes it: these columns, by these names, in this order.
CHUNK_FIELDS = ("ordinal", "kind", "heading", "text", "tokens", "start", "time", "meta")


def sources(vault: Vault, *, kind: str | None = None, project: str | None = None
            ) -> Iterator[ExportSource]:
    """The ready sources to export, in id order (read a page at a time)."""
    where: list[str] = ["state = 'ready'"]
    args: list[Any] = []
    where_equal(where, args, {"kind": kind, "project": project})
    last = 0
    while True:
        rows = vault._query(
            f"SELECT {SOURCE_COLUMNS}, meta FROM sources WHERE {' AND '.join(where)} AND id > ? "
            "ORDER BY id LIMIT 200", [*args, last])
        if not rows:
            return
        for r in rows:
            yield ExportSource(SourceInfo(*r[:-1]), json.loads(r[-1] or "{}"))
        last = rows[-1][0]


def by_ids(vault: Vault, source_ids: list[int]) -> list[ExportSource]:
    """The ready sources ``source_ids`` (a transcript's segments), in id order."""
    out: list[ExportSource] = []
    for part in id_batches(source_ids):
        out += [ExportSource(SourceInfo(*r[:-1]), json.loads(r[-1] or "{}"))
                for r in vault._query(
                    f"SELECT {SOURCE_COLUMNS}, meta FROM sources WHERE state = 'ready' "
                    f"AND id IN ({','.join('?' * len(part))})", part)]
    return sorted(out, key=lambda s: s.info.id)


def chunks(vault: Vault, source_id: int) -> list[dict[str, Any]]:
    """A source's chunks in ordinal order, each ``CHUNK_FIELDS`` (meta parsed)."""
    rows = vault._query(
        f"SELECT {', '.join(CHUNK_FIELDS)} FROM chunks WHERE source_id = ? ORDER BY ordinal",
        (source_id,))
    return [dict(zip(CHUNK_FIELDS, [*r[:-1], json.loads(r[-1] or "{}")], strict=True))
            for r in rows]


def surrogates(vault: Vault, source_id: int) -> dict[str, str] | None:
    rows = vault._query("SELECT full, gist, micro FROM surrogates WHERE source_id = ?",
                        (source_id,))
    return {"full": rows[0][0], "gist": rows[0][1], "micro": rows[0][2]} if rows else None
