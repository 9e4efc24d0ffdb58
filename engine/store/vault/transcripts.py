"""A transcript file as one memory item, although the vault stores it as segments.

Each sync of a session's file stores what it added as a source of its own
(``transcript:<path>#<offset>``), and the calls still waiting for their result as
``transcript:<path>#pending`` (``engine/flows/recall/sync.py``). To a user the session
is one item: listed once (``grouped``: its segments' chunks, tokens and bytes summed,
``segments`` counting them), counted once by ``status`` (``ITEM_KEY``), and deleted
whole (``whole_files``: a name of any one segment, by id or uri, names them all, so a
delete never leaves part of a session, nor forgets the parser state the rest needs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from engine.api import SourceInfo
from engine.store.vault.core import Vault
from engine.store.vault.rows import id_batches

TRANSCRIPT = "transcript:"  # the uri scheme of every segment (and of a whole file's name)
KIND = "transcript"  # the source kind the sync stores segments under

# SQL: the file a transcript segment is part of (its uri up to its last '#': the tail
# is digits or 'pending'); and what a source counts as, one value per memory item.
FILE_KEY = ("CASE WHEN uri GLOB '*#pending' THEN substr(uri, 1, length(uri) - 7) "
            "ELSE rtrim(uri, '0123456789') END")
ITEM_KEY = (f"CASE WHEN kind = 'transcript' AND uri GLOB 'transcript:*#*' THEN {FILE_KEY} "
            "ELSE 'id:' || id END")


def file_uri(uri: str, kind: str = KIND) -> str | None:
    """``transcript:<path>``, the name of the whole file, for a segment's uri; None for
    a source that is no transcript segment."""
    if kind != KIND or not uri.startswith(TRANSCRIPT) or "#" not in uri:
        return None
    return uri[:uri.rindex("#")]


def grouped(rows: Sequence[SourceInfo]) -> list[SourceInfo]:
    """``rows`` (sources by id) with each transcript file's segments as one source, at
    its first segment's place: that segment's id (a delete of it deletes the file), the
    file's uri (``transcript:<path>``), the newest segment's title and project, chunks,
    tokens and bytes summed, the first ``created_at``, the last ``ingested_at``, stage
    ``keyword`` while any segment waits for vectors, and a ``content_hash`` over the
    segments' hashes (it changes whenever the file grows)."""
    out: list[SourceInfo | list[SourceInfo]] = []
    files: dict[str, list[SourceInfo]] = {}
    for row in rows:
        name = file_uri(row.uri, row.kind)
        if name is None:
            out.append(row)
        elif name in files:
            files[name].append(row)
        else:
            files[name] = [row]
            out.append(files[name])
    return [_one(item) if isinstance(item, list) else item for item in out]


def _one(segments: list[SourceInfo]) -> SourceInfo:
    segments = sorted(segments, key=lambda s: s.id)
    first, newest = segments[0], segments[-1]
    name = file_uri(first.uri, first.kind) or first.uri
    created = [s.created_at for s in segments if s.created_at is not None]
    return replace(
        first, uri=name, title=newest.title,
        content_hash=hashlib.sha256("\n".join(s.content_hash for s in segments)
                                    .encode("utf-8")).hexdigest(),
        bytes=sum(s.bytes for s in segments), created_at=min(created) if created else None,
        ingested_at=max(s.ingested_at for s in segments),
        n_chunks=sum(s.n_chunks for s in segments), tokens=sum(s.tokens for s in segments),
        project=next((s.project for s in reversed(segments) if s.project), None),
        stage="keyword" if any(s.stage == "keyword" for s in segments) else "ready",
        segments=len(segments))


def whole_files(vault: Vault, source_ids: Sequence[int]) -> list[int]:
    """``source_ids`` with every ready segment of each transcript file one of them is a
    segment of, by id."""
    out = {int(s) for s in source_ids}
    files = {name for _, uri in _by_id(vault, "uri", source_ids, f"kind = '{KIND}'")
             if (name := file_uri(str(uri))) is not None}
    for name in sorted(files):
        out.update(segments_of(vault, name))
    return sorted(out)


def segments_of(vault: Vault, name: str) -> list[int]:
    """The ready segments of the transcript file ``name`` (``transcript:<path>``), by id:
    uris from "<name>#" up to "<name>$" (the uri index's range), of them those whose
    file is ``name``: the range holds another file's too where that file's name begins
    with "<path>#" (``s.jsonl`` and ``s.jsonl#2.jsonl``)."""
    return sorted(int(sid) for sid, uri in vault._query(
        "SELECT id, uri FROM sources WHERE uri >= ? AND uri < ? AND kind = ? "
        "AND state = 'ready'", (name + "#", name + "$", KIND))
        if file_uri(str(uri)) == name)


# SQL: the ready transcript segments beyond one per file, what a count of source rows
# says more than a count of memory items (read through the uri index, transcripts only)
EXTRA_SEGMENTS = (f"SELECT count(*) - count(DISTINCT {FILE_KEY}) FROM sources "
                  "WHERE uri >= 'transcript:' AND uri < 'transcript;' AND kind = 'transcript' "
                  "AND uri GLOB 'transcript:*#*' AND state = 'ready'")


def item_keys(vault: Vault, source_ids: Sequence[int]) -> dict[int, str]:
    """Source id -> the memory item it is part of (``ITEM_KEY``: a transcript segment's
    file, any other source itself), in whatever state (a delete under way too)."""
    return {int(sid): str(key) for sid, key in _by_id(vault, ITEM_KEY, source_ids)}


def _by_id(vault: Vault, column: str, source_ids: Sequence[int],
           where: str = "1") -> list[tuple[Any, Any]]:
    """(id, ``column``) of the sources ``source_ids`` that match ``where`` (a batch of ids
    a query)."""
    out: list[tuple[Any, Any]] = []
    for part in id_batches(source_ids):
        out += [(r[0], r[1]) for r in vault._query(
            f"SELECT id, {column} FROM sources WHERE id IN ({','.join('?' * len(part))}) "
            f"AND {where}", part)]
    return out
