"""Numbered schema migrations for the vault, recorded in ``schema_migrations``."""

from __future__ import annotations

import logging
import time
from typing import Any

from engine.api.notices import UPGRADE_LOGGER

Conn = Any  # a sqlcipher3 connection

log = logging.getLogger(UPGRADE_LOGGER)  # front ends show it: a long first open is not silent


M1_BASE = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            uri TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            fmt TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            bytes INTEGER NOT NULL DEFAULT 0,
            created_at REAL,
            ingested_at REAL NOT NULL,
            n_chunks INTEGER NOT NULL DEFAULT 0,
            tokens INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'pending',
            project TEXT,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX sources_uri ON sources(uri, state);
        CREATE INDEX sources_project ON sources(project, state);
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            kind TEXT NOT NULL,
            heading TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            start INTEGER NOT NULL DEFAULT 0,
            time REAL,
            content_hash TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX chunks_source ON chunks(source_id, ordinal);
        CREATE INDEX chunks_time ON chunks(time);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, heading, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END;
        CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)
            VALUES ('delete', old.id, old.text, old.heading);
        END;
        CREATE TABLE surrogates (
            source_id INTEGER PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
            full TEXT NOT NULL, gist TEXT NOT NULL, micro TEXT NOT NULL
        );
        CREATE TABLE embed_cache (
            hash TEXT PRIMARY KEY, vec BLOB NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE access_stats (
            source_id INTEGER PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
            count INTEGER NOT NULL DEFAULT 0,
            last_access REAL
        );
        CREATE TABLE vector_tombstones (
            source_id INTEGER PRIMARY KEY, created REAL NOT NULL
        );
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY, state TEXT NOT NULL, created REAL NOT NULL,
            updated REAL NOT NULL, stats TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY, time REAL NOT NULL, method TEXT NOT NULL,
            caller_pid INTEGER, ids TEXT NOT NULL DEFAULT '[]', counts TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX audit_time ON audit(time);
        CREATE TABLE recall_files (
            path TEXT PRIMARY KEY, state TEXT NOT NULL
        );
"""

# Transcript chunks: their session and failure flag as indexed columns, so that
# "latest sessions" and "failures of a project" read an index, not every chunk's JSON.
M2_SESSIONS = """
        ALTER TABLE chunks ADD COLUMN session TEXT;
        ALTER TABLE chunks ADD COLUMN failure INTEGER NOT NULL DEFAULT 0;
        UPDATE chunks SET session = json_extract(meta, '$.session'),
                          failure = COALESCE(json_extract(meta, '$.failure'), 0)
         WHERE json_extract(meta, '$.session') IS NOT NULL;
        CREATE INDEX chunks_session ON chunks(session, time) WHERE session IS NOT NULL;
        CREATE INDEX chunks_failure ON chunks(failure, time) WHERE failure = 1;
"""

# Document frequencies of indexed terms, so the keyword lane can leave out words
# that match a large share of the store (they cost the most and rank the least).
M3_VOCAB = """
        CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab('chunks_fts', 'row');
"""

# Identical content under several paths is stored once: the other paths are aliases
# of the source that holds it (deleting one path keeps the others). Sources are looked
# up by content hash to find such a twin.
M4_SOURCE_ALIASES = """
        CREATE TABLE source_aliases (
            uri TEXT PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            created_at REAL,
            added REAL NOT NULL
        );
        CREATE INDEX source_aliases_source ON source_aliases(source_id, added);
        CREATE INDEX sources_content ON sources(content_hash, state);
"""

# Deleted means gone: FTS5 removes a deleted row's terms from the index segments
# themselves ('secure-delete', SQLite 3.42+), not only a tombstone beside them; the
# chunk ids whose vectors must leave the vector store are kept (ids only) until
# they have (the vector store's ids are keyed, so the vault must remember them);
# chunks are looked up by content hash to tell when an embedding-cache row is no
# longer used by any chunk.
M5_DELETED_MEANS_GONE = """
        INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize');
        CREATE TABLE vector_dead (
            chunk_id INTEGER PRIMARY KEY, source_id INTEGER NOT NULL
        );
        CREATE INDEX vector_dead_source ON vector_dead(source_id);
        CREATE TRIGGER chunks_vec_ad AFTER DELETE ON chunks BEGIN
            INSERT OR IGNORE INTO vector_dead VALUES (old.id, old.source_id);
        END;
        CREATE INDEX chunks_hash ON chunks(content_hash);
"""

# The vault's chunk version goes up with every chunk stored or deleted and every
# source made ready or pending: an encrypted snapshot of the vector index records
# the version it was taken at, so a snapshot that still matches is used at open
# as it is (engine/store/vectors/snapshot.py).
M6_CHUNK_VERSION = """
        INSERT OR IGNORE INTO meta VALUES ('chunk_version', '0');
        CREATE TRIGGER chunks_version_ai AFTER INSERT ON chunks BEGIN
            UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunk_version';
        END;
        CREATE TRIGGER chunks_version_ad AFTER DELETE ON chunks BEGIN
            UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunk_version';
        END;
        CREATE TRIGGER sources_version_au AFTER UPDATE OF state ON sources BEGIN
            UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunk_version';
        END;
"""

# Staged ingestion: a source is stored ready for the keyword lane first (``embedded``
# 0) and gets its vectors after (1); sources written before this were both at once.
# Making a source embedded changes which chunks have vectors, so the chunk version
# (the vector snapshot's) goes up with it; the partial index lists what waits.
M7_STAGES = """
        ALTER TABLE sources ADD COLUMN embedded INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX sources_waiting ON sources(id) WHERE embedded = 0;
        CREATE TRIGGER sources_version_embedded AFTER UPDATE OF embedded ON sources BEGIN
            UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunk_version';
        END;
"""

# What recall learned from the user's sessions (engine/retrieval/adapt.py): the fitted
# model (one row), and the query-side vectors of the texts it embedded (a request, the
# words before a tool call), each under the chunk that quotes it, so that deleting a
# session deletes them (cascade). Deleting any transcript source drops the model: it
# may have learned from it (the next sync fits it again).
M8_RECALL_ADAPT = """
        CREATE TABLE adapt_model (
            id INTEGER PRIMARY KEY CHECK (id = 1), fitted REAL NOT NULL, model BLOB NOT NULL
        );
        CREATE TABLE adapt_texts (
            chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            role TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (chunk_id, role)
        ) WITHOUT ROWID;
        CREATE TRIGGER adapt_sources_ad AFTER DELETE ON sources
        WHEN old.kind = 'transcript' BEGIN
            DELETE FROM adapt_model;
        END;
"""

# A code block quoted in a coding session had the chunk kind of a document's code
# ("code"); it has its own now, so that no filter of session kinds passes a document
# chunk (issue 31). Its text, vector and embedding-cache key are unchanged.
M9_SESSION_CODE = """
        UPDATE chunks SET kind = 'session_code' WHERE kind = 'code'
            AND source_id IN (SELECT id FROM sources WHERE kind = 'transcript');
"""

# The speaker names of a store's conversation chunks (``Vault.speakers``, read by every
# search's plan) are read from this partial index: the names of the chunks that have
# one, without a scan of every chunk's row. Read from the rows, after each write that
# deleted chunks (each step of a delete) the names took a scan of the whole table:
# searches during a 65k-chunk delete took 1-2 s each (issue 32, docs/performance.md).
M10_SPEAKER_INDEX = """
        CREATE INDEX chunks_speaker ON chunks(json_extract(meta, '$.speaker'))
            WHERE meta LIKE '%"speaker"%';
"""

# The chunks without a time (documents'), by kind: whether a filter of kinds can pass
# any of them is a seek here (``recency.has_untimed``). Recall's filter of session kinds
# passes none, and without this the recency lane walked every document source to find
# that out: 1.5 s a recall in a 500k-chunk store of documents and sessions (issue 35).
M11_UNTIMED_KIND_INDEX = """
        CREATE INDEX chunks_untimed_kind ON chunks(kind) WHERE time IS NULL;
"""

# The columns a filter of kinds, sources and times reads, beside each chunk's id: the
# keyword lane's filtered query tests each row FTS5 matches through this small index
# (``Vault.keyword``) instead of the chunk's own row, whose page holds its text (at
# 500k chunks, 60 recalls' keyword queries: 67 s through the rows, 20 s through this
# index, 16 s for FTS5 alone without the filter; issue 35).
M12_FILTER_INDEX = """
        CREATE INDEX chunks_filter ON chunks(id, kind, source_id, time);
"""

# A transcript's pending calls (``transcript:<path>#pending``: the calls still waiting
# for their result where the file ended) are stored again at each sync of a growing file,
# and dropped once their result is read: their words then live on in the session's own
# segment. Dropping them must not drop what recall learned (a fit of every session each
# time); a session deleted still drops it (its segments go too, and the engine's delete
# drops the model itself whatever it deletes).
M13_PENDING_KEEPS_ADAPT = """
        DROP TRIGGER adapt_sources_ad;
        CREATE TRIGGER adapt_sources_ad AFTER DELETE ON sources
        WHEN old.kind = 'transcript' AND old.uri NOT GLOB '*#pending' BEGIN
            DELETE FROM adapt_model;
        END;
"""

# The recency lane's source-by-source part (``recency.recent``: the chunks without a time,
# newest source first) reads each source's untimed chunks here, not every chunk of the
# source to test its time (a temporal build_context at 1M chunks read all 191k session
# chunks, which have times, before it reached the documents: 0.65 s), and walks the
# sources newest first through the second index instead of sorting them all (issue 35).
M14_RECENCY_INDEXES = """
        CREATE INDEX chunks_untimed_source ON chunks(source_id) WHERE time IS NULL;
        CREATE INDEX sources_newest ON sources(COALESCE(created_at, ingested_at, 0), id);
"""

# The sources by kind: whether any source has one of a filter's kinds is a seek here
# (``Vault.keyword``: when none has, the keyword lane tests each matched row's own kind
# before it reads the row's source; issue 35).
M15_SOURCE_KIND_INDEX = """
        CREATE INDEX sources_kind ON sources(kind);
"""

# Recall's keyword lane matches in an FTS5 index of the session chunks alone (its kinds,
# ``RECALL_FTS_KINDS``), not in chunks_fts, where a common word's document rows were
# matched and joined only to be dropped by the kinds filter (at 1M chunks, "file":
# 158,895 rows, 140 ms; issue 35). Its BM25 statistics are the sessions' own. Kept by
# triggers on every insert, delete and update of a chunk's kind, text or heading.
M16_RECALL_FTS = """
        CREATE VIRTUAL TABLE recall_fts USING fts5(
            text, heading, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO recall_fts(recall_fts, rank) VALUES ('secure-delete', 1);
        INSERT INTO recall_fts(rowid, text, heading) SELECT id, text, heading FROM chunks
            WHERE kind IN ('turn_pair', 'thinking', 'session_code', 'tool');
        CREATE TRIGGER recall_fts_ai AFTER INSERT ON chunks
        WHEN new.kind IN ('turn_pair', 'thinking', 'session_code', 'tool') BEGIN
            INSERT INTO recall_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END;
        CREATE TRIGGER recall_fts_ad AFTER DELETE ON chunks
        WHEN old.kind IN ('turn_pair', 'thinking', 'session_code', 'tool') BEGIN
            INSERT INTO recall_fts(recall_fts, rowid, text, heading)
            VALUES ('delete', old.id, old.text, old.heading);
        END;
        CREATE TRIGGER recall_fts_au AFTER UPDATE OF kind, text, heading ON chunks BEGIN
            INSERT INTO recall_fts(recall_fts, rowid, text, heading)
            SELECT 'delete', old.id, old.text, old.heading
            WHERE old.kind IN ('turn_pair', 'thinking', 'session_code', 'tool');
            INSERT INTO recall_fts(rowid, text, heading) SELECT new.id, new.text, new.heading
            WHERE new.kind IN ('turn_pair', 'thinking', 'session_code', 'tool');
        END;
"""

# The chunk kinds recall_fts holds (migration 16's literals; a test checks they are
# engine.recall's RECALL_CHUNK_KINDS, which the store layer does not import).
RECALL_FTS_KINDS = ("turn_pair", "thinking", "session_code", "tool")

# Each migration is a SQL script, applied in one transaction with its record,
# in order of its number (numbers are fixed once released).
MIGRATIONS: dict[int, str] = {1: M1_BASE, 2: M2_SESSIONS, 3: M3_VOCAB, 4: M4_SOURCE_ALIASES,
                              5: M5_DELETED_MEANS_GONE, 6: M6_CHUNK_VERSION, 7: M7_STAGES,
                              8: M8_RECALL_ADAPT, 9: M9_SESSION_CODE, 10: M10_SPEAKER_INDEX,
                              11: M11_UNTIMED_KIND_INDEX, 12: M12_FILTER_INDEX,
                              13: M13_PENDING_KEEPS_ADAPT, 14: M14_RECENCY_INDEXES,
                              15: M15_SOURCE_KIND_INDEX, 16: M16_RECALL_FTS}


def check_version(conn: Conn) -> None:
    """StoreTooNew when the vault records a migration this version does not know."""
    from engine.errors import StoreTooNew

    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'schema_migrations'").fetchone()
    if not has:
        return
    unknown = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")
               if r[0] not in MIGRATIONS]
    if unknown:
        raise StoreTooNew(
            f"this store was written by a newer ctx (schema {max(unknown)}, this version "
            f"knows up to {max(MIGRATIONS)}): upgrade ctx, or restore a backup")


def migrate(conn: Conn) -> int:
    """Apply every migration not yet recorded; returns the schema version."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'schema_migrations'").fetchone()
    if not has:  # a store read-only (disk full) must still open: no write when present
        conn.execute("CREATE TABLE schema_migrations "
                     "(version INTEGER PRIMARY KEY, applied REAL NOT NULL)")
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    for number, script in sorted(MIGRATIONS.items()):
        if number in done:
            continue
        if done:  # an existing store upgraded: an index over every chunk takes seconds at 1M
            log.info("upgrading the store to schema %d (once)", number)
        began = time.monotonic()
        try:
            conn.executescript(
                f"BEGIN IMMEDIATE;\n{script}\n"
                f"INSERT INTO schema_migrations VALUES ({number}, {time.time()!r});\nCOMMIT;")
        except Exception:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if done:
            log.info("schema %d applied in %.1f s", number, time.monotonic() - began)
    return max(MIGRATIONS)
