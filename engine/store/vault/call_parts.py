"""The parts of tool calls (``engine.recall.chunks``): a call's whole input or output
stored in chunks of their own beside the call's chunk, keyed ``<call key>:input#n`` and
``<call key>:output#n``. A call's input parts come before its chunk (at most a few dozen
chunks before, when sibling calls ran between), its output parts right after it; so
they are read by the ordinal index within ``reach`` chunks either side, only the rows
whose key is one of the call's parts built (recall reads them for the calls it shows:
``engine.flows.recall.parts``). In a session's transcript they are read in every
segment of its file: a sync that ran while the call waited for its result stored its
input parts in that sync's segment, the call in a later one (or in the pending calls'
source), at the ordinals that follow."""

from __future__ import annotations

from collections.abc import Sequence

from engine.store.vault.core import Vault
from engine.store.vault.rows import CHUNK_COLUMNS, ChunkRow, id_batches
from engine.store.vault.transcripts import whole_files


def call_parts(vault: Vault, calls: Sequence[tuple[int, int, str]], reach: int
               ) -> dict[str, list[ChunkRow]]:
    """For each call (its chunk's source id, ordinal and key), its parts within
    ``reach`` ordinals of it in a ready source (the source, or every segment of its
    transcript file), in their order (inputs, then outputs); a call with none is left
    out."""
    out: dict[str, list[ChunkRow]] = {}
    files: dict[int, list[int]] = {}  # a call's source -> its file's every segment
    for source, ordinal, key in dict.fromkeys(calls):
        ids = files.setdefault(source, whole_files(vault, [source]))
        found: list[ChunkRow] = []
        for part in id_batches(ids):
            found += [ChunkRow.from_row(r) for r in vault._query(
                f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id "
                f"WHERE c.source_id IN ({','.join('?' * len(part))}) "
                "AND c.ordinal BETWEEN ? AND ? AND s.state = 'ready' "
                "AND json_extract(c.meta, '$.part') IN ('input', 'output') "
                "AND substr(json_extract(c.meta, '$.key'), 1, ?) = ?",
                (*part, ordinal - reach, ordinal + reach, len(key) + 1, key + ":"))]
        if found:
            out[key] = sorted(found, key=lambda r: r.ordinal)
    return out
