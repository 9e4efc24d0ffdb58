"""The parts of tool calls (``engine.recall.chunks``): a call's whole input or output
stored in chunks of their own beside the call's chunk, keyed ``<call key>:input#n`` and
``<call key>:output#n``. A call's input parts come before its chunk (at most a few dozen
chunks before, when sibling calls ran between), its output parts right after it; so
they are read by the source's ordinal index within ``reach`` chunks either side, only
the rows whose key is one of the call's parts built (recall reads them for the calls
it shows: ``engine.flows.recall.parts``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.store.vault.core import Vault
from engine.store.vault.rows import CHUNK_COLUMNS, ChunkRow


def call_parts(vault: Vault, calls: Sequence[tuple[int, int, str]], reach: int
               ) -> dict[str, list[ChunkRow]]:
    """For each call (its chunk's source id, ordinal and key), its parts within
    ``reach`` ordinals of it in a ready source, in their order (inputs, then outputs);
    a call with none is left out."""
    out: dict[str, list[ChunkRow]] = {}
    for source, ordinal, key in dict.fromkeys(calls):
        rows = vault._query(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE c.source_id = ? AND c.ordinal BETWEEN ? AND ? AND s.state = 'ready' "
            "AND json_extract(c.meta, '$.part') IN ('input', 'output') "
            "AND substr(json_extract(c.meta, '$.key'), 1, ?) = ? ORDER BY c.ordinal",
            (source, ordinal - reach, ordinal + reach, len(key) + 1, key + ":"))
        found = [ChunkRow.from_row(r) for r in rows]
        if found:
            out[key] = found
    return out
