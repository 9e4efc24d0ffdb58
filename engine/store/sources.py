"""Source-level writes on the vault, crash-safe with the vector store.

A source is written as ``pending`` (rows, chunks, FTS, surrogates in one
transaction), its vectors are added, then it becomes ``ready`` in a second
transaction that also retires the version it replaces. Vector deletions are
recorded as tombstones in the same transaction as the rows they follow, and
cleared once Chroma has done them. ``recover()`` at open finishes or undoes
whatever a crash interrupted, so every source is fully present or absent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.api import SourceInfo
from engine.pathnames import shown
from engine.store.vault import Vault
from engine.types import ChunkDraft, LoadedDocument

_COLS = ("id, uri, kind, title, fmt, content_hash, bytes, created_at, ingested_at, n_chunks, "
         "tokens, project")


def list_ready(vault: Vault, *, project: str | None = None) -> list[SourceInfo]:
    sql = f"SELECT {_COLS} FROM sources WHERE state = 'ready'"
    args: tuple[Any, ...] = ()
    if project is not None:
        sql += " AND project = ?"
        args = (project,)
    return [SourceInfo(*r) for r in vault._conn().execute(sql + " ORDER BY id", args).fetchall()]


def versions(vault: Vault, uri: str) -> list[tuple[int, str]]:
    """(id, content hash) of the ready sources stored under ``uri``, newest first."""
    return [(r[0], r[1]) for r in vault._query(
        "SELECT id, content_hash FROM sources WHERE uri = ? AND state = 'ready' "
        "ORDER BY id DESC", (uri,))]


def insert_pending(vault: Vault, doc: LoadedDocument, content_hash: str,
                   chunks: Sequence[ChunkDraft], chunk_hashes: Sequence[str],
                   surrogates: dict[str, str] | None, project: str | None = None) -> tuple[int, list[int]]:
    """Write a source and its chunks as ``pending``; returns (source id, chunk ids)."""
    now = time.time()
    with vault.write() as c:
        cur = c.execute(
            "INSERT INTO sources(uri, kind, title, fmt, content_hash, bytes, created_at, "
            "ingested_at, n_chunks, tokens, state, project, meta) "
            "VALUES (?,?,?,?,?,?,?,?,?,?, 'pending', ?, ?)",
            (doc.uri, doc.kind, doc.title, doc.fmt, content_hash,
             int(doc.meta.get("bytes", len(doc.text.encode("utf-8")))), doc.created_at, now,
             len(chunks), sum(ch.tokens for ch in chunks), project,
             json.dumps({k: v for k, v in doc.meta.items() if k in ("mtime", "language")})),
        )
        source_id = int(cur.lastrowid)
        ids: list[int] = []
        for ch, h in zip(chunks, chunk_hashes):
            session = ch.meta.get("session")
            cur = c.execute(
                "INSERT INTO chunks(source_id, ordinal, kind, heading, text, tokens, start, time, "
                "content_hash, meta, session, failure) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (source_id, ch.ordinal, ch.kind, ch.heading, ch.text, ch.tokens, ch.start,
                 ch.time, h, json.dumps(ch.meta, sort_keys=True, default=str),
                 str(session) if session is not None else None,
                 1 if ch.meta.get("failure") else 0),
            )
            ids.append(int(cur.lastrowid))
        if surrogates:
            c.execute("INSERT INTO surrogates VALUES (?,?,?,?)",
                      (source_id, surrogates.get("full", ""), surrogates.get("gist", ""),
                       surrogates.get("micro", "")))
    return source_id, ids


def finalize(vault: Vault, source_id: int, replaces: Sequence[int] = ()) -> None:
    """Make a pending source ready and retire the versions it replaces (tombstoned)."""
    with vault.write() as c:
        c.execute("UPDATE sources SET state = 'ready' WHERE id = ?", (source_id,))
        for old in replaces:
            c.execute("INSERT OR IGNORE INTO vector_tombstones VALUES (?, ?)", (old, time.time()))
            c.execute("DELETE FROM sources WHERE id = ?", (old,))


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
        for key, h in doomed.items():
            kept = any(cache_key(*row) == key for row in c.execute(  # type: ignore[misc]
                "SELECT s.title, c.heading, c.kind, c.text FROM chunks c "
                "JOIN sources s ON s.id = c.source_id WHERE c.content_hash = ?", (h,)))
            if not kept:
                c.execute("DELETE FROM embed_cache WHERE hash = ?", (key,))
    return len(source_ids)


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


def counts(vault: Vault) -> dict[str, int]:
    row = vault._conn().execute(
        "SELECT count(*), COALESCE(sum(n_chunks), 0), COALESCE(sum(tokens), 0), "
        "COALESCE(sum(bytes), 0) FROM sources WHERE state = 'ready'").fetchone()
    return {"sources": row[0], "chunks": row[1], "tokens": row[2], "bytes": row[3]}


TRANSCRIPT = "transcript:"
_NOT_PATHS = ("text:", "stdin:", "conversation:", "project:", TRANSCRIPT)


def resolve(vault: Vault, source: str | int) -> list[int]:
    """Ready sources named by an id, a uri, a file or folder path (documents and
    transcript segments under it), or ``project:NAME``."""
    text = shown(str(source).strip())  # names that are not UTF-8 are stored with \xNN escapes
    if text.isdigit():
        return _ids(vault, "id = ?", (int(text),))
    if text.startswith("project:"):
        return _ids(vault, "project = ?", (text[len("project:"):],))
    found = _ids(vault, "uri = ?", (text,))
    if found:
        return found
    if text.startswith(TRANSCRIPT):  # transcript:<path> names every segment of it
        return _prefixed(vault, text + "#")
    if "://" in text or text.startswith(_NOT_PATHS):
        return []
    real = Path(str(source).strip()).expanduser().resolve()
    path = shown(real)
    found = _ids(vault, "uri = ?", (path,)) + _prefixed(vault, f"{TRANSCRIPT}{path}#")
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