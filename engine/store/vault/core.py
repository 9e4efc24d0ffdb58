"""The encrypted vault: SQLCipher 4 holding sources, chunks, FTS5, surrogates and logs.

One connection per thread (WAL lets readers run beside the writer); writes go
through ``write()``, which serialises them with a lock so that the engine has a
single writer at a time. The database key is a raw 256-bit key derived from the
data key, so opening costs no PBKDF. What its reads take and give (``Filters``,
``ChunkRow``) is in ``rows.py``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlcipher3 import dbapi2 as sqlite

from engine.errors import CtxError, EngineClosed, NoSpace, VaultDamaged
from engine.store.vault.fts_terms import chunk_counts, common_counts
from engine.store.vault.gate import ReadGate
from engine.store.vault.guard import VaultGuard
from engine.store.vault.integrity import VaultConnection, probe, quiet
from engine.store.vault.keyword_reads import KeywordReads
from engine.store.vault.kind_share import KindShare
from engine.store.vault.migrations import migrate
from engine.store.vault.reserve import Reserve
from engine.store.vault.rows import CHUNK_COLUMNS, ChunkRow

log = logging.getLogger("ctx.vault")
T = TypeVar("T")

def is_disk_full(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "disk is full" in text or "no space" in text or \
        getattr(exc, "sqlite_errorcode", None) == 13  # SQLITE_FULL


def store_error(exc: BaseException) -> CtxError:
    """The error to raise for a SQLite failure on an opened vault."""
    if is_disk_full(exc):
        return NoSpace("the disk holding the data dir is full: nothing was written; free "
                       "some space and retry (the store can still be read)")
    return VaultDamaged(f"vault.db is damaged ({type(exc).__name__}: "
                        f"{str(exc)[:80]}): restore it from a backup of this store")


# The rows of the partial index of speakers (migration 10): a query that names its
# condition as written there reads the index, not the table.
SPEAKER_ROWS = "meta LIKE '%\"speaker\"%'"
DF_CACHE_MAX = 100_000  # words whose chunk counts a vault keeps (doc_frequency)
COMMON_TERMS_MIN = 50  # a term counts as common from this many chunks (and 1 in 1000)
COMMON_TERMS_DRIFT = 0.1  # common terms are counted again when the store moved this much


class Vault(KeywordReads):
    def __init__(self, path: Path, db_key: bytes, *, cache_mb: int = 64) -> None:
        self.path = path
        self._hexkey = db_key.hex()
        self._cache_kib = cache_mb * 1024
        self._local = threading.local()
        self._closed = False  # close() ends every connection; none is opened after
        self._write_lock = threading.RLock()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        self._generation = 0
        self._count_cache: tuple[int, int] | None = None
        self._all_ready: tuple[int, bool] = (-1, False)  # (generation, every source ready)
        # (generation, {kinds filter: whether a chunk without a time passes it})
        self._untimed: tuple[int, dict[tuple[str, ...], bool]] = (-1, {})
        self._waiting: tuple[int, frozenset[int]] | None = None  # (generation, source ids)
        # (generation, word -> chunks holding it): a vocabulary lookup reads the word's
        # whole posting list (several ms for common words at 100k chunks), so counts are
        # kept until the next write that may change chunks
        self._df_cache: tuple[int, dict[str, int]] = (-1, {})
        # (chunk count and highest chunk id when read, the counts of the store's common
        # terms, the write generation last checked): see _common_terms
        self._common: tuple[int, int, dict[str, int], int] | None = None
        self._common_lock = threading.Lock()
        # a warm-up thread is about to count the common terms (``expect_common_pass``)
        self._common_coming = False
        self._kind_share = KindShare()  # what a kinds filter passes (keyword's plan)
        self._sessions_n: tuple[int, int] = (-1, 0)  # (generation, sessions)
        self._tokens: dict[str, tuple[str, ...]] = {}  # word -> its FTS tokens (fts_terms)
        # (generation, highest chunk id read, chunk count then, speaker names)
        self._speaker_cache: tuple[int, int, int, frozenset[str]] | None = None
        self.read_only = False
        self._filter_join = "chunks c"  # the keyword lane's filtered join (see keyword)
        self._recall_fts = False  # whether the vault holds recall_fts (migration 16)
        self.reserve: Reserve | None = None  # room for clean-up on a full disk (with_room)
        self.gate = ReadGate()  # reading calls hold it; a file swap waits for them (rekey)
        # While a key rotation holds the writes (engine/store/vault/rekey.py): the access counts
        # of reads, kept here and written after it, so that no read waits for it.
        self.held_access: list[tuple[list[int], float]] | None = None
        self.guard = VaultGuard(path, self._hexkey, self._write_lock)
        # Small vaults have every page checked before the open returns; bigger ones in a
        # thread (check_pages_later), so that an open stays fast.
        self.pages_checked = self.guard.small
        new = not path.exists() or path.stat().st_size == 0
        probe(path, self._hexkey, pages=self.pages_checked)  # read-only: changes nothing
        sidecars = [path.with_name(path.name + s) for s in ("-wal", "-shm")]
        self._made = [p for p in sidecars if not p.exists()]  # removed if the open fails
        try:
            conn = self._conn()
            with self._write_lock:
                if new:  # gives free pages back a step at a time (``vacuum_step``); an
                    # existing vault switches at its first compaction (``vacuum``), never at
                    # an open: a refused open leaves the vault as it was found
                    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                migrate(conn)
                self.guard.wrote()
            # (a store opened read-only before migration 12 has no such index)
            self._filter_join = "chunks c INDEXED BY chunks_filter" if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'chunks_filter'"
            ).fetchone() else "chunks c"
            self._recall_fts = conn.execute(  # (nor has one opened read-only before 16)
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'recall_fts'"
            ).fetchone() is not None
        except CtxError:
            self._close_failed()
            raise
        except sqlite.DatabaseError as exc:
            self._close_failed()
            raise store_error(exc) from None

    def _close_failed(self) -> None:
        """Close after a failed open and remove the WAL files that open made (an empty
        log and its index), so that a refused vault is left as it was found."""
        self.close()
        for p in self._made:
            try:
                if p.name.endswith("-shm") or p.stat().st_size == 0:
                    p.unlink()
            except OSError:
                pass

    def _conn(self) -> Any:
        """This thread's connection (opened on first use). Private to engine/store/: SQL
        runs only behind the store's named functions. A damaged vault refuses every call;
        a replaced one is named (``guard``)."""
        if self._closed:  # a thread still reading after close(): no new connection, and
            raise EngineClosed("the store is closed")  # no damage check of a file let go
        self.guard.tick()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.guard.check()
            conn = sqlite.connect(str(self.path), isolation_level=None, check_same_thread=False,
                                  timeout=30.0, factory=VaultConnection)
            conn.translate = self.guard.translate  # damage met in a query: VaultDamaged
            quiet(conn)  # a refused key is reported by ctx, not by SQLCipher's log on stderr
            conn.execute(f"PRAGMA key = \"x'{self._hexkey}'\"")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(f"PRAGMA cache_size = -{self._cache_kib}")
            with self._all_lock:
                if self._closed:  # close() ran while this one connected: it is not kept
                    conn.close()
                    raise EngineClosed("the store is closed")
                self._all.append(conn)
            self._local.conn = conn
        return conn

    def with_room(self, fn: Callable[[], T]) -> T:
        """``fn()`` (a clean-up write); on a full disk, once more after giving the data
        dir's reserved space back (``reserve``)."""
        try:
            return fn()
        except NoSpace:
            if self.reserve is None or not self.reserve.release():
                raise
            return fn()

    @property
    def damage(self) -> VaultDamaged | None:
        """The damage met so far (every call is refused with it), or None."""
        return self.guard.damage

    def _close_connections(self) -> None:
        """Close every thread's connection (the caller holds ``_all_lock``); a thread's
        next call opens a new one (after a key rotation's swap) or is refused (closed)."""
        for conn in self._all:
            try:
                conn.close()
            except sqlite.Error:
                pass
        self._all.clear()
        self._local = threading.local()

    def close(self) -> None:
        with self._all_lock:  # a thread connecting now sees it before it keeps a connection
            self._closed = True
        self.guard.stop()  # a page check in a thread ends first
        with self._all_lock:
            self._close_connections()
        self._tokens.clear()  # the words of past queries go with the vault
        self._df_cache = (-1, {})
        self._common = None

    @contextmanager
    def write(self, *, chunks: bool = True) -> Iterator[Any]:
        """One write transaction, serialised with every other writer of this engine.
        ``chunks=False`` promises it changes no chunk, so the caches of chunk counts
        and speakers stay valid (access stats, audit rows, meta)."""
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite.OperationalError as exc:
                if is_disk_full(exc):
                    raise store_error(exc) from None
                raise
            try:
                yield conn
                conn.execute("COMMIT")
                self.guard.wrote()  # a checkpoint may have changed vault.db: ours
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite.Error) and is_disk_full(exc):
                    raise store_error(exc) from None
                raise
            if chunks:
                self._generation += 1

    def wipe_log(self, tries: int = 150) -> None:
        """Copy the WAL into vault.db and cut it to nothing (``wal_checkpoint(TRUNCATE)``),
        so that deleted text leaves it: the log keeps every page image written since the
        last checkpoint, the deleted text among them, while vault.db's own pages are
        zeroed as they are freed (``secure_delete``). Writers wait; readers of the log
        are waited for (a query takes milliseconds), ``tries`` times 20 ms at most,
        then the log is left to the next checkpoint, with a warning."""
        with self._write_lock:
            conn = self._conn()
            for _ in range(tries):
                try:
                    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                except sqlite.OperationalError as exc:
                    raise store_error(exc) from None
                self.guard.wrote()
                if not busy:
                    return
                time.sleep(0.02)
            log.warning("the vault's log is still being read: deleted text stays in it until "
                        "the next checkpoint")

    def free_pages(self) -> tuple[int, int]:
        """(pages in vault.db, of them free): what a compaction would give back."""
        conn = self._conn()
        return (int(conn.execute("PRAGMA page_count").fetchone()[0]),
                int(conn.execute("PRAGMA freelist_count").fetchone()[0]))

    def incremental(self) -> bool:
        """Whether vault.db gives free pages back a step at a time (auto_vacuum 2)."""
        return int(self._conn().execute("PRAGMA auto_vacuum").fetchone()[0]) == 2

    def vacuum(self) -> None:
        """Rewrite vault.db whole (encrypted with its key, as every page), leaving no
        free page, and switch it to incremental vacuum so that later compactions go a
        step at a time (``vacuum_step``). Other writers wait; readers go on (WAL)."""
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                conn.execute("VACUUM")
            except sqlite.OperationalError as exc:
                raise store_error(exc) from None
            finally:
                self.guard.wrote()
            self._generation += 1

    def vacuum_step(self, pages: int) -> int:
        """Give back up to ``pages`` free pages (one short write); the free pages left."""
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()
                left = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            except sqlite.OperationalError as exc:
                raise store_error(exc) from None
            finally:
                self.guard.wrote()
            return left

    @property
    def generation(self) -> int:
        """Goes up with every write that may change chunks (caches key on it)."""
        return self._generation

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """``sql``'s rows, read on this thread's connection. Private to engine/store/."""
        return self._conn().execute(sql, tuple(args)).fetchall()

    # --- meta ---------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.write(chunks=False) as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # --- chunks -------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        return self._chunk_rows(ids, CHUNK_COLUMNS)

    def filter_rows(self, ids: Sequence[int], *, meta: bool) -> dict[int, ChunkRow]:
        """``chunks`` as ``Filters.matches`` reads them: no heading or text, and the meta
        parsed only when ``meta`` (the filter tests a path root or a branch). The vector
        lane tests its 8x over-fetched hits so: 400 rows a recall, their JSON and text
        never built. Without ``meta``, a chunk's kind, source and time are read from the
        small ``chunks_filter`` index alone (migration 12), not from the chunk's row,
        whose page holds its text: its ordinal, tokens and start read 0 then (at 500k
        chunks, 400 rows: 8.3 -> 4.5 ms CPU; docs/performance.md)."""
        cols = CHUNK_COLUMNS.replace("c.heading, c.text,", "'', '',")
        if meta:
            return self._chunk_rows(ids, cols)
        cols = cols.replace("c.meta,", "'{}',")
        if self._filter_join == "chunks c":  # no index (a store opened read-only before 12)
            return self._chunk_rows(ids, cols)
        cols = cols.replace("c.ordinal,", "0,").replace("c.tokens, c.start,", "0, 0,")
        return self._chunk_rows(ids, cols, self._filter_join)

    def _chunk_rows(self, ids: Sequence[int], cols: str,
                    table: str = "chunks c") -> dict[int, ChunkRow]:
        """The rows of ``ids`` among ready sources, read as ``cols`` (CHUNK_COLUMNS or
        a cheaper stand-in of the same shape) from ``table`` (the chunks, or an index of
        them holding every column ``cols`` reads), 900 ids a statement."""
        out: dict[int, ChunkRow] = {}
        ids = list(ids)
        for i in range(0, len(ids), 900):
            part = ids[i:i + 900]
            rows = self._conn().execute(
                f"SELECT {cols} FROM {table} JOIN sources s ON s.id = c.source_id "
                f"WHERE c.id IN ({','.join('?' * len(part))}) AND s.state = 'ready'", part,
            ).fetchall()
            out.update({r[0]: ChunkRow.from_row(r) for r in rows})
        return out

    def session_chunks(self, sessions: Sequence[str], limit: int, *, text: bool = True,
                       meta: bool = True) -> list[ChunkRow]:
        """The chunks of ready sources of the given transcript sessions (session order,
        then ordinal), at most ``limit`` (by the session index). ``text=False``: their
        heading and text read as '' and ``meta=False``: their meta as {} (rows to choose
        from by id and filter, read whole once chosen: ``Vault.chunks``)."""
        if not sessions or limit <= 0:
            return []
        cols = CHUNK_COLUMNS if text else CHUNK_COLUMNS.replace("c.heading, c.text,", "'', '',")
        if not meta:
            cols = cols.replace("c.meta,", "'{}',")
        rows = self._conn().execute(
            f"SELECT {cols} FROM chunks c JOIN sources s ON s.id = c.source_id "
            f"WHERE c.session IN ({','.join('?' * len(sessions))}) AND s.state = 'ready' "
            "ORDER BY c.session, c.source_id, c.ordinal LIMIT ?", (*sessions, limit),
        ).fetchall()
        return [ChunkRow.from_row(r) for r in rows]

    def session_chunk_kinds(self, sessions: Sequence[str], limit: int
                            ) -> list[tuple[int, str, str]]:
        """``session_chunks``' rows (same order, same ``limit``) as (chunk id, kind, its
        source's kind) alone: what a filter of kinds tests of them, read without the
        rest of the row (its columns after the text, which a long text's overflow pages
        hold) and never built as rows. Session expansion picks a later session's chunks
        so: at 1M chunks 350 rows a recall in about 0.5 ms, not 3 (issue 35)."""
        if not sessions or limit <= 0:
            return []
        return [(r[0], r[1], r[2]) for r in self._conn().execute(
            "SELECT c.id, c.kind, s.kind FROM chunks c JOIN sources s ON s.id = c.source_id "
            f"WHERE c.session IN ({','.join('?' * len(sessions))}) AND s.state = 'ready' "
            "ORDER BY c.session, c.source_id, c.ordinal LIMIT ?", (*sessions, limit),
        ).fetchall()]

    def sessions_holding(self, words: Sequence[str], max_chunks: int
                         ) -> tuple[dict[str, frozenset[str]], int]:
        """For each word in 1..``max_chunks`` chunks, the sessions holding it; and how
        many sessions the store holds (``engine.store.vault.session_terms``; the count kept
        until the next write)."""
        from engine.store.vault.session_terms import session_count, sessions_holding

        wanted = [w.lower() for w in words]
        counts = self.doc_frequency(wanted)
        held = sessions_holding(self._conn(), wanted, counts, max_chunks)
        gen = self._generation
        if self._sessions_n[0] != gen:
            self._sessions_n = (gen, session_count(self._conn()))
        return held, self._sessions_n[1]

    def neighbours(self, source_id: int, lo: int, hi: int) -> list[ChunkRow]:
        rows = self._conn().execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE c.source_id = ? AND c.ordinal BETWEEN ? AND ? ORDER BY c.ordinal",
            (source_id, lo, hi),
        ).fetchall()
        return [ChunkRow.from_row(r) for r in rows]

    def turn_outcome_rows(self, source_id: int, lo: int, hi: int, turns: Sequence[Any]
                          ) -> list[tuple[Any, Any, str, bool, str | None, str | None, str]]:
        """What a turn's outcome reads of the ``neighbours`` whose ``meta["turn"]`` is one of
        ``turns`` (None: no turn), in their order, told apart in SQL and never built as rows
        (a recall reads 121 rows around each hit for the few of its turn): (session, turn,
        kind, failure, error_kind, tool, text), the text a reply's only ("" for other
        kinds: the outcome quotes the last reply)."""
        want = list(dict.fromkeys(turns))
        if not want:
            return []
        rows = self._conn().execute(
            "SELECT json_extract(c.meta, '$.session'), json_extract(c.meta, '$.turn'), "
            "c.kind, json_extract(c.meta, '$.failure'), json_extract(c.meta, '$.error_kind'), "
            "json_extract(c.meta, '$.tool'), CASE WHEN c.kind = 'turn_pair' THEN c.text "
            "ELSE '' END FROM chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE c.source_id = ? AND c.ordinal BETWEEN ? AND ? AND ("
            + " OR ".join(["json_extract(c.meta, '$.turn') IS ?"] * len(want))
            + ") ORDER BY c.ordinal", (source_id, lo, hi, *want),
        ).fetchall()
        return [(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6]) for r in rows]

    def chunks_at(self, positions: Sequence[tuple[int, int]]
                  ) -> dict[tuple[int, int], tuple[int, str, str]]:
        """What lies at the given (source id, ordinal) places of ready sources: place ->
        (chunk id, kind, heading); places with no chunk are left out. One indexed
        lookup per place, no text read."""
        wanted = sorted(set(positions))
        out: dict[tuple[int, int], tuple[int, str, str]] = {}
        for i in range(0, len(wanted), 400):
            part = wanted[i:i + 400]
            rows = self._conn().execute(
                f"WITH want(sid, ord) AS (VALUES {','.join(['(?, ?)'] * len(part))}) "
                "SELECT c.source_id, c.ordinal, c.id, c.kind, c.heading FROM want "
                "JOIN chunks c ON c.source_id = want.sid AND c.ordinal = want.ord "
                "JOIN sources s ON s.id = c.source_id WHERE s.state = 'ready'",
                [v for p in part for v in p],
            ).fetchall()
            out.update({(r[0], r[1]): (r[2], r[3], r[4]) for r in rows})
        return out

    def doc_frequency(self, words: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each word, looked up in the FTS vocabulary under the
        tokens FTS5 makes of the word (``engine.store.vault.fts_terms``)."""
        gen = self._generation
        if self._df_cache[0] != gen or len(self._df_cache[1]) > DF_CACHE_MAX:
            self._df_cache = (gen, {})
        known = self._df_cache[1]
        wanted = [w.lower() for w in words]
        missing = [w for w in dict.fromkeys(wanted) if w not in known]
        if missing:
            known.update(self._vocab_counts(missing))
        return {w: known[w] for w in wanted}

    def _vocab_counts(self, words: Sequence[str]) -> dict[str, int]:
        """``doc_frequency`` read from the FTS vocabulary, uncached (lowercase words)."""
        return chunk_counts(self._conn(), words, self._common_terms(wait=False), self._tokens)

    def expect_common_pass(self, coming: bool = True) -> None:
        """A warm-up thread is about to count the common terms (``warm_keyword_counts``;
        ``coming=False``: it will not, or has): until it does, a query looks its own
        words up one by one rather than making that pass itself. Set before the thread
        starts: a first query asked right after it could otherwise take the pass's lock
        first and count the whole vocabulary in its own call (1.5 s at 1M chunks)."""
        self._common_coming = coming

    def warm_keyword_counts(self) -> None:
        """Count the store's common terms (``_common_terms``) and its chunks by kind
        (``kind_share``) now, not in the first keyword query; ``ContextEngine.warm_up``
        runs it in a thread at open."""
        try:
            self._common_terms()
            self._kind_share.counts(self._conn(), self.chunk_count())
        except sqlite.Error as exc:
            raise store_error(exc) from None

    def _common_terms(self, *, wait: bool = True) -> dict[str, int] | None:
        """The counts of the terms in at least 1 in 1000 chunks (``common_counts``), read
        again once a tenth of the store has changed since (chunks added or deleted, from
        the highest chunk id and the count): between, a common term's count may be off
        by up to that many chunks, which only shifts which words the keyword lane lets
        find rows (``engine.retrieval.fts_match.keyword_match``). One pass costs 0.3 s at
        100k chunks (0.8 s at 500k) and runs in the warm-up after open, or in the first
        keyword query of a store that needs it. ``wait=False``: None while the first pass
        runs in another thread (the warm-up's), so that a query asked meanwhile looks its
        own words up one by one (exact counts, the same a fresh pass reads) instead of
        waiting for the whole vocabulary; and so does one asked before a warm-up thread
        started for it takes the lock (``expect_common_pass``)."""
        held = self._common
        if held is not None and held[3] == self._generation:  # no write since: as read
            return held[2]
        if held is None and not wait and self._common_coming:  # the warm-up's to make
            return None
        if not self._common_lock.acquire(blocking=wait or held is not None):
            return None
        try:
            n = self.chunk_count()
            top = int(self._conn().execute("SELECT coalesce(max(id), 0) FROM chunks"
                                          ).fetchone()[0])
            held = self._common
            if held is not None:
                added = max(0, top - held[1])
                deleted = max(0, held[0] + added - n)
                if added + deleted <= COMMON_TERMS_DRIFT * held[0]:
                    self._common = (held[0], held[1], held[2], self._generation)
                    return held[2]
            counts = common_counts(self._conn(), max(COMMON_TERMS_MIN, n // 1000))
            self._common = (n, top, counts, self._generation)
            return counts
        finally:
            self._common_lock.release()

    def chunk_version(self) -> int:
        """Goes up with every chunk stored or deleted and every source made ready or
        pending, and persists (migration 6): what a vector snapshot was taken at."""
        return int(self.get_meta("chunk_version") or 0)

    def chunk_fingerprints(self) -> tuple[list[int], list[str]]:
        """Every chunk of a ready source that has its vectors (not one waiting for the
        vector stage): ids ascending and their content hashes, read from the
        content-hash index alone (no text page is read)."""
        rows = self._conn().execute(
            "SELECT id, content_hash FROM chunks INDEXED BY chunks_hash").fetchall()
        busy = {r[0] for r in self._conn().execute(
            "SELECT c.id FROM sources s JOIN chunks c ON c.source_id = s.id "
            "WHERE s.state != 'ready' OR s.embedded = 0")}
        rows = sorted(r for r in rows if r[0] not in busy)
        return [r[0] for r in rows], [r[1] or "" for r in rows]

    def chunk_ids(self) -> list[int]:
        """Every stored chunk's id, ascending (0.6 s at 100k chunks)."""
        return [r[0] for r in self._conn().execute("SELECT id FROM chunks ORDER BY id")]

    def chunk_count(self) -> int:
        """Stored chunks (cached until the next write)."""
        gen = self._generation
        if self._count_cache is None or self._count_cache[0] != gen:
            n = int(self._conn().execute("SELECT count(*) FROM chunks").fetchone()[0])
            self._count_cache = (gen, n)
        return self._count_cache[1]

    def speakers(self) -> frozenset[str]:
        """Names of the conversation speakers in the store. Cached until the next write;
        after one only new chunks are read, unless chunks were also deleted."""
        gen, cache = self._generation, self._speaker_cache
        if cache is not None and cache[0] == gen:
            return cache[3]
        conn = self._conn()
        count = self.chunk_count()
        if cache is not None:
            added, top = conn.execute("SELECT count(*), max(id) FROM chunks WHERE id > ?",
                                      (cache[1],)).fetchone()
            if cache[2] + int(added) == count:
                names = cache[3] | self._speakers_after(conn, cache[1])
                self._speaker_cache = (gen, int(top or cache[1]), count, names)
                return names
        top = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
        names = self._speakers_after(conn, -1)
        self._speaker_cache = (gen, int(top or 0), count, names)
        return names

    @staticmethod
    def _speakers_after(conn: Any, after_id: int) -> frozenset[str]:
        """The speakers of the chunks past ``after_id`` (all: -1), read from the partial
        index ``chunks_speaker`` (migration 10): its condition is this query's own."""
        sql = ("SELECT DISTINCT json_extract(meta, '$.speaker') FROM chunks "
               f"WHERE {SPEAKER_ROWS}")
        rows = (conn.execute(sql).fetchall() if after_id < 0 else
                conn.execute(sql + " AND id > ?", (after_id,)).fetchall())
        return frozenset(r[0].strip() for r in rows if isinstance(r[0], str) and r[0].strip())

    def waiting_sources(self) -> frozenset[int]:
        """Ids of the stored sources whose vectors are not made yet (staged ingestion:
        the keyword lanes find them, the vector lane not yet); cached per write
        generation (one read of a partial index, empty most of the time)."""
        gen, held = self._generation, self._waiting
        if held is not None and held[0] == gen:
            return held[1]
        ids = frozenset(r[0] for r in self._conn().execute(
            "SELECT id FROM sources INDEXED BY sources_waiting WHERE embedded = 0"))
        self._waiting = (gen, ids)
        return ids

    def _ready_chunks(self, ids: Sequence[int]) -> set[int]:
        """Those of ``ids`` whose source is ready (an ingest or delete in progress leaves
        its chunks out). While every source is ready (known per write generation, with
        no chunk read), that is all of them: 0.7 ms of a 4 ms keyword lane at 100k."""
        if not ids:
            return set()
        gen = self._generation
        if self._all_ready[0] != gen:
            busy = self._conn().execute(
                "SELECT 1 FROM sources WHERE state != 'ready' LIMIT 1").fetchone()
            self._all_ready = (gen, busy is None)
        if self._all_ready[1]:
            return set(ids)
        rows = self._conn().execute(
            "SELECT c.id FROM chunks c JOIN sources s ON s.id = c.source_id "
            f"WHERE c.id IN ({','.join('?' * len(ids))}) AND s.state = 'ready'", list(ids),
        ).fetchall()
        return {r[0] for r in rows}

    # --- embeddings cache ---------------------------------------------------
    def cached_vectors(self, hashes: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        hashes = list(hashes)
        for i in range(0, len(hashes), 900):
            part = hashes[i:i + 900]
            out.update(self._conn().execute(
                f"SELECT hash, vec FROM embed_cache WHERE hash IN ({','.join('?' * len(part))})",
                part).fetchall())
        return out

    # --- audit and access ---------------------------------------------------
    def record_access(self, source_ids: Sequence[int], now: float) -> None:
        if not source_ids:
            return
        held = self.held_access
        if held is not None:
            held.append((list(source_ids), now))
            return
        try:
            self._record_access(source_ids, now)
        except NoSpace:  # statistics are best effort: a full disk must not fail a read
            log.warning("disk full: access statistics not recorded")

    def _record_access(self, source_ids: Sequence[int], now: float) -> None:
        with self.write(chunks=False) as c:
            c.executemany(
                "INSERT INTO access_stats(source_id, count, last_access) VALUES (?, 1, ?) "
                "ON CONFLICT(source_id) DO UPDATE SET count = count + 1, last_access = ?",
                [(sid, now, now) for sid in sorted(set(source_ids))],
            )

    def access(self, source_ids: Sequence[int]) -> dict[int, tuple[int, float | None]]:
        if not source_ids:
            return {}
        ids = sorted(set(source_ids))
        rows = self._conn().execute(
            "SELECT source_id, count, last_access FROM access_stats "
            f"WHERE source_id IN ({','.join('?' * len(ids))})", ids).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    def add_audit(self, method: str, caller_pid: int | None, ids: Sequence[str],
                  counts: dict[str, int], *, at: float | None = None) -> None:
        """One audit record (``at``: when the call made it; now by default)."""
        self.add_audits([(time.time() if at is None else at, method, caller_pid, list(ids),
                          dict(counts))])

    def add_audits(self, records: Sequence[tuple[float, str, int | None, Sequence[str],
                                                 Mapping[str, int]]]) -> None:
        """Audit records (time, method, caller pid, ids, counts) in one transaction."""
        rows = [(at, method, pid, json.dumps(list(ids)), json.dumps(dict(counts), sort_keys=True))
                for at, method, pid, ids, counts in records]
        try:
            with self.write(chunks=False) as c:
                c.executemany("INSERT INTO audit(time, method, caller_pid, ids, counts) "
                              "VALUES (?,?,?,?,?)", rows)
        except NoSpace:  # a read on a full disk still answers; the rows are lost, logged
            log.warning("disk full: %d audit rows not written", len(rows))

    def audit(self, since: float | None, limit: int) -> list[dict[str, Any]]:
        rows = self._conn().execute(
            "SELECT time, method, caller_pid, ids, counts FROM audit WHERE time >= ? "
            "ORDER BY id DESC LIMIT ?", (since or 0.0, limit)).fetchall()
        return [{"time": r[0], "method": r[1], "caller_pid": r[2], "ids": json.loads(r[3]),
                 "counts": json.loads(r[4])} for r in rows]
