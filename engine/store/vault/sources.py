"""Source-level writes on the vault, crash-safe with the vector store.

Ingestion stores a source in two stages, each one transaction:

1. ``store_keyword``: rows, chunks, FTS, surrogates, written ``ready`` with
   ``embedded = 0``, retiring the versions it replaces: from then on the keyword
   lanes find it (the vector lane does not have it yet);
2. ``mark_embedded``: once the vector store holds its chunks' vectors.

A crash between the two leaves a whole, keyword-searchable source whose vectors
are made again at the next open (from the embedding cache where they got that
far). Vector deletions are recorded as tombstones in the same transaction as the
rows they follow, and cleared once the vector store has done them. ``recover()``
at open removes sources left ``pending`` (written by the single-stage writer of
older versions), so every source is absent, keyword-ready or fully ready.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

from engine.api import SourceInfo
from engine.pathnames import shown
from engine.store.vault.aliases import retire_versions
from engine.store.vault.core import Vault
from engine.store.vault.transcripts import (
    EXTRA_SEGMENTS,
    ITEM_KEY,
    TRANSCRIPT,
    segments_of,
    whole_files,
)
from engine.types import ChunkDraft, LoadedDocument

SOURCE_COLUMNS = ("id, uri, kind, title, fmt, content_hash, bytes, created_at, ingested_at, n_chunks, "
         "tokens, project, CASE embedded WHEN 0 THEN 'keyword' ELSE 'ready' END")


def list_ready(vault: Vault, *, project: str | None = None) -> list[SourceInfo]:
    """Every stored source (keyword-ready or fully ready), by id."""
    sql = f"SELECT {SOURCE_COLUMNS} FROM sources WHERE state = 'ready'"
    args: tuple[Any, ...] = ()
    if project is not None:
        sql += " AND project = ?"
        args = (project,)
    return [SourceInfo(*r) for r in vault._conn().execute(sql + " ORDER BY id", args).fetchall()]


def title_of(vault: Vault, source_id: int) -> str | None:
    row = vault._query("SELECT title FROM sources WHERE id = ? AND state = 'ready'",
                       (source_id,))
    return str(row[0][0]) if row else None


def uris_of(vault: Vault, source_ids: Sequence[int]) -> list[str]:
    """The uris of the given sources (those that exist)."""
    out: list[str] = []
    for sid in source_ids:
        out += [str(r[0]) for r in vault._query("SELECT uri FROM sources WHERE id = ?",
                                                (int(sid),))]
    return out


def versions(vault: Vault, uri: str) -> list[tuple[int, str]]:
    """(id, content hash) of the ready sources stored under ``uri``, newest first."""
    return [(r[0], r[1]) for r in vault._query(
        "SELECT id, content_hash FROM sources WHERE uri = ? AND state = 'ready' "
        "ORDER BY id DESC", (uri,))]


@dataclass
class NewSource:
    """A document to store: its chunks (with their content hashes), surrogates, the
    ready versions it replaces, and whether its uri was an alias until now."""

    doc: LoadedDocument
    content_hash: str
    chunks: Sequence[ChunkDraft]
    chunk_hashes: Sequence[str]
    surrogates: dict[str, str] | None
    project: str | None = None
    replaces: Sequence[int] = ()
    unalias: bool = False


def store_keyword(vault: Vault, items: Sequence[NewSource]) -> list[int]:
    """Stage 1, in one transaction: write each source with its chunks (and so its FTS
    rows) as ready for the keyword lanes (``embedded = 0``; 1 when it has no chunk),
    hand each replaced version to another of its paths or retire it (tombstoned),
    and drop the alias rows of uris that get a source of their own. Returns the new
    source ids, in order."""
    now = time.time()
    out: list[int] = []
    with vault.write() as c:
        for it in items:
            sid = _insert(c, it, now)
            retire_versions(c, it.replaces)
            if it.unalias:
                c.execute("DELETE FROM source_aliases WHERE uri = ?", (it.doc.uri,))
            out.append(sid)
    return out


def _insert(c: Any, it: NewSource, now: float) -> int:
    doc, chunks = it.doc, it.chunks
    cur = c.execute(
        "INSERT INTO sources(uri, kind, title, fmt, content_hash, bytes, created_at, "
        "ingested_at, n_chunks, tokens, state, project, meta, embedded) "
        "VALUES (?,?,?,?,?,?,?,?,?,?, 'ready', ?, ?, ?)",
        (doc.uri, doc.kind, doc.title, doc.fmt, it.content_hash,
         int(doc.meta.get("bytes", len(doc.text.encode("utf-8")))), doc.created_at, now,
         len(chunks), sum(ch.tokens for ch in chunks), it.project,
         json.dumps({k: v for k, v in doc.meta.items() if k in ("mtime", "language")}),
         0 if chunks else 1),
    )
    source_id = int(cur.lastrowid)
    c.executemany(
        "INSERT INTO chunks(source_id, ordinal, kind, heading, text, tokens, start, time, "
        "content_hash, meta, session, failure) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [(source_id, ch.ordinal, ch.kind, ch.heading, ch.text, ch.tokens, ch.start, ch.time,
          h, json.dumps(ch.meta, sort_keys=True, default=str),
          str(ch.meta["session"]) if ch.meta.get("session") is not None else None,
          1 if ch.meta.get("failure") else 0)
         for ch, h in zip(chunks, it.chunk_hashes, strict=True)])
    if it.surrogates:
        c.execute("INSERT INTO surrogates VALUES (?,?,?,?)",
                  (source_id, it.surrogates.get("full", ""), it.surrogates.get("gist", ""),
                   it.surrogates.get("micro", "")))
    return source_id


class EmbedRow(NamedTuple):
    """What the vector stage needs of one chunk: its embedding input and the metadata
    its vector is filed under."""

    id: int
    source_id: int
    title: str
    heading: str
    kind: str
    text: str
    time: float | None
    uri: str
    source_kind: str
    created_at: float | None
    project: str | None


def waiting(vault: Vault, limit: int | None = None) -> list[tuple[int, int]]:
    """(source id, chunks) of the sources stored for the keyword lanes whose vectors are
    not made yet, oldest first."""
    sql = ("SELECT id, n_chunks FROM sources INDEXED BY sources_waiting "
           "WHERE embedded = 0 AND state = 'ready' ORDER BY id")
    rows = vault._query(sql + (" LIMIT ?" if limit is not None else ""),
                        (limit,) if limit is not None else ())
    return [(int(r[0]), int(r[1])) for r in rows]


def last_id(vault: Vault) -> int:
    """The highest source id stored so far (0 in an empty store): sources stored later
    have higher ids."""
    rows = vault._query("SELECT COALESCE(MAX(id), 0) FROM sources")
    return int(rows[0][0]) if rows else 0


def embed_rows(vault: Vault, source_ids: Sequence[int]) -> list[EmbedRow]:
    """The chunks of these sources that still wait for vectors, by source then ordinal
    (a source replaced or deleted meanwhile has none)."""
    out: list[EmbedRow] = []
    for i in range(0, len(source_ids), 400):
        part = [int(s) for s in source_ids[i:i + 400]]
        out += [EmbedRow(*r) for r in vault._query(
            "SELECT c.id, c.source_id, s.title, c.heading, c.kind, c.text, c.time, s.uri, "
            "s.kind, s.created_at, s.project FROM chunks c JOIN sources s "
            f"ON s.id = c.source_id WHERE s.id IN ({','.join('?' * len(part))}) "
            "AND s.embedded = 0 AND s.state = 'ready' ORDER BY c.source_id, c.ordinal",
            part)]
    return out


def mark_embedded(vault: Vault, source_ids: Sequence[int]) -> None:
    """Stage 2 done: the vector store holds these sources' vectors."""
    if source_ids:
        with vault.write() as c:
            c.executemany("UPDATE sources SET embedded = 1 WHERE id = ? AND embedded = 0",
                          [(int(s),) for s in source_ids])


KeyOf = Callable[[str, str, str, str], str]  # (title, heading, kind, text) -> cache key


def delete_sources(vault: Vault, source_ids: Sequence[int], *,
                   cache_key: KeyOf | None = None) -> int:
    """Delete sources (rows, chunks, FTS, surrogates, stats); vectors are tombstoned.

    With ``cache_key``, the embedding-cache rows of the deleted chunks that no
    remaining chunk uses go too, in the same transaction (deleted means gone).
    The FTS index removes the terms from its segments ('secure-delete') and the
    vault zeroes freed pages (``secure_delete``).
    """
    if not source_ids:
        return 0
    with vault.write() as c:
        doomed: dict[str, str] = {}
        if cache_key is not None:
            for sid in source_ids:
                for title, heading, kind, text, h in c.execute(
                        "SELECT s.title, c.heading, c.kind, c.text, c.content_hash FROM chunks c "
                        "JOIN sources s ON s.id = c.source_id WHERE s.id = ?", (sid,)):
                    doomed[cache_key(title, heading, kind, text)] = h
        for sid in source_ids:
            c.execute("INSERT OR IGNORE INTO vector_tombstones VALUES (?, ?)", (sid, time.time()))
            c.execute("DELETE FROM sources WHERE id = ?", (sid,))
        if cache_key is not None:
            _drop_unused_cache(c, doomed, cache_key)
    return len(source_ids)


def _drop_unused_cache(c: Any, doomed: dict[str, Any], cache_key: KeyOf) -> None:
    """Remove the embedding-cache rows of ``doomed`` (key -> content hash) that no chunk
    left in the vault still uses (a chunk of the same hash and the same cache key)."""
    for key, h in doomed.items():
        kept = any(cache_key(*row) == key for row in c.execute(
            "SELECT s.title, c.heading, c.kind, c.text FROM chunks c "
            "JOIN sources s ON s.id = c.source_id WHERE c.content_hash = ?", (h,)))
        if not kept:
            c.execute("DELETE FROM embed_cache WHERE hash = ?", (key,))


DELETING = "deleting"  # a source a delete job is removing: no read sees it any more


def mark_deleting(vault: Vault, source_ids: Sequence[int]) -> None:
    """Hide sources from every read at once (state "deleting", one short transaction a
    few hundred at a time); ``delete_step`` then removes them a little at a time. A
    delete cut short resumes at the next open."""
    for i in range(0, len(source_ids), 500):
        part = [(int(s),) for s in source_ids[i:i + 500]]
        with vault.write() as c:
            c.executemany(f"UPDATE sources SET state = '{DELETING}' WHERE id = ?", part)


def being_deleted(vault: Vault) -> list[int]:
    """Sources a delete job was removing when the engine stopped."""
    return [int(r[0]) for r in vault._query(
        f"SELECT id FROM sources WHERE state = '{DELETING}' ORDER BY id")]


def delete_step(vault: Vault, source_id: int, limit: int, *,
                cache_key: KeyOf | None = None) -> int:
    """Remove up to ``limit`` chunks of a source being deleted, in one transaction (with
    their FTS entries and the embedding-cache rows no other chunk uses); once it has
    none left, the source itself, its vectors tombstoned (``flush_tombstones`` drops
    them: the vector store learns which chunks were its). Returns the chunks removed
    (0: the source is gone)."""
    with vault.write() as c:
        rows = c.execute(
            "SELECT c.id, s.title, c.heading, c.kind, c.text, c.content_hash FROM chunks c "
            "JOIN sources s ON s.id = c.source_id WHERE c.source_id = ? ORDER BY c.id "
            "LIMIT ?", (source_id, limit)).fetchall()
        if not rows:
            c.execute("INSERT OR IGNORE INTO vector_tombstones VALUES (?, ?)",
                      (source_id, time.time()))
            c.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            return 0
        c.executemany("DELETE FROM chunks WHERE id = ?", [(r[0],) for r in rows])
        if cache_key is not None:
            _drop_unused_cache(c, {cache_key(r[1], r[2], r[3], r[4]): r[5] for r in rows},
                               cache_key)
        return len(rows)


def tombstones(vault: Vault) -> list[int]:
    return [r[0] for r in vault._query("SELECT source_id FROM vector_tombstones ORDER BY source_id")]


def clear_tombstones(vault: Vault, source_ids: Sequence[int]) -> None:
    """The vector store has dropped these sources' vectors: forget them."""
    if source_ids:
        with vault.write(chunks=False) as c:
            c.executemany("DELETE FROM vector_tombstones WHERE source_id = ?",
                          [(s,) for s in source_ids])
            c.executemany("DELETE FROM vector_dead WHERE source_id = ?",
                          [(s,) for s in source_ids])


def dead_chunks(vault: Vault, source_id: int) -> list[int]:
    """Ids of a deleted source's chunks whose vectors may still be in the vector store."""
    return [r[0] for r in vault._query("SELECT chunk_id FROM vector_dead WHERE source_id = ?",
                                      (source_id,))]


def recover(vault: Vault) -> list[int]:
    """Undo sources left pending by a crash: rows deleted, vectors tombstoned."""
    pending = [r[0] for r in vault._query("SELECT id FROM sources WHERE state = 'pending'")]
    delete_sources(vault, pending)
    return pending


class SourceCounts(TypedDict):
    """``counts``: the vault's share of ``Status`` (its field names)."""
    sources: int
    chunks: int
    tokens: int
    bytes: int
    sources_waiting: int
    chunks_waiting: int


def counts(vault: Vault) -> SourceCounts:
    """Stored sources, chunks, tokens and bytes; and of them, the sources (and chunks)
    still waiting for their vectors. A transcript's segments count as one source, as
    ``sources`` lists them (``transcripts``)."""
    row = vault._conn().execute(
        f"SELECT count(*) - ({EXTRA_SEGMENTS}), COALESCE(sum(n_chunks), 0), "
        "COALESCE(sum(tokens), 0), COALESCE(sum(bytes), 0) FROM sources "
        "WHERE state = 'ready'").fetchone()
    wait = vault._conn().execute(
        f"SELECT count(DISTINCT {ITEM_KEY}), COALESCE(sum(n_chunks), 0) FROM sources "
        "INDEXED BY sources_waiting WHERE embedded = 0 AND state = 'ready'").fetchone()
    return {"sources": row[0], "chunks": row[1], "tokens": row[2], "bytes": row[3],
            "sources_waiting": wait[0], "chunks_waiting": wait[1]}


_NOT_PATHS = ("text:", "stdin:", "conversation:", "project:", TRANSCRIPT)


def resolve(vault: Vault, source: str | int) -> list[int]:
    """Ready sources named by an id, a uri, a file or folder path (documents and
    transcript segments under it), or ``project:NAME``; a transcript whole, whichever
    of its segments is named (``transcripts.whole_files``)."""
    return whole_files(vault, _named(vault, source))


def _named(vault: Vault, source: str | int) -> list[int]:
    text = shown(str(source).strip())  # names that are not UTF-8 are stored with \xNN escapes
    if text.isdigit():
        return _ids(vault, "id = ?", (int(text),))
    if text.startswith("project:"):
        return _ids(vault, "project = ?", (text[len("project:"):],))
    found = _ids(vault, "uri = ?", (text,))
    if found:
        return found
    if text.startswith(TRANSCRIPT):  # transcript:<path> names every segment of it
        return segments_of(vault, text)
    if "://" in text or text.startswith(_NOT_PATHS):
        return []
    real = Path(str(source).strip()).expanduser().resolve()
    path = shown(real)
    found = _ids(vault, "uri = ?", (path,)) + segments_of(vault, TRANSCRIPT + path)
    if found or not real.is_dir():
        return sorted(set(found))
    folder = path.rstrip("/") + "/"
    return sorted(set(_prefixed(vault, folder) + _prefixed(vault, TRANSCRIPT + folder)))


def _ids(vault: Vault, where: str, args: tuple[Any, ...]) -> list[int]:
    return [r[0] for r in vault._query(
        f"SELECT id FROM sources WHERE {where} AND state = 'ready' ORDER BY id", args)]


def _prefixed(vault: Vault, prefix: str) -> list[int]:
    return _ids(vault, "substr(uri, 1, ?) = ?", (len(prefix), prefix))


def transcript_paths(vault: Vault, source_ids: Sequence[int]) -> list[str]:
    """The transcript files that the given sources are segments of."""
    out: set[str] = set()
    for sid in source_ids:
        for (uri,) in vault._query("SELECT uri FROM sources WHERE id = ?", (sid,)):
            if uri.startswith(TRANSCRIPT) and "#" in uri:
                out.add(uri[len(TRANSCRIPT):uri.rindex("#")])
    return sorted(out)


FORGOTTEN = "forgotten:"  # recall_files rows of deleted transcripts: a keyed name, no path


def forgotten_name(path: str, name_key: Callable[[str], str]) -> str:
    """What recall_files calls a deleted transcript: a keyed hash of its path."""
    return FORGOTTEN + name_key(path)


def forget_sync_text(vault: Vault, paths: Sequence[str], name_key: Callable[[str], str]
                     ) -> None:
    """Drop what these transcripts' sync state says of them: the parser state (it holds
    user text) and the path itself, which is kept only as a keyed hash (``name_key``,
    derived from the data key), with the offsets, so that a later sync finds the file
    and reads only what is appended after the delete."""
    if not paths:
        return
    with vault.write(chunks=False) as c:
        for path in paths:
            row = c.execute("SELECT state FROM recall_files WHERE path = ?", (path,)).fetchone()
            if row is None:
                continue
            c.execute("DELETE FROM recall_files WHERE path = ?", (path,))
            try:
                state = json.loads(row[0])
            except ValueError:
                state = None
            if isinstance(state, dict):
                name = forgotten_name(path, name_key)
                state["parser_state"], state["path"] = {}, name
                c.execute("INSERT OR REPLACE INTO recall_files VALUES (?, ?)",
                          (name, json.dumps(state)))