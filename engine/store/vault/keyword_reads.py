"""The vault's keyword lane: FTS5 BM25 over the chunks (``chunks_fts``) or the session
chunks alone (``recall_fts``, migration 16), bounded in big stores, with the rows a
filter passes. A part of ``Vault`` (``core``), which keeps the connections, the word
counts and the caches these reads use."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.pools import shared_pool
from engine.store.vault.kind_share import OVERFETCH_MIN_SHARE, KindShare, overfetch
from engine.store.vault.migrations import RECALL_FTS_KINDS
from engine.store.vault.rows import Filters, id_batches


def _fts_pool() -> ThreadPoolExecutor:
    """Threads for a keyword query's second FTS5 query, shared by every vault of the
    process (each keeps its own connection per thread)."""
    return shared_pool("ctx-fts", 2)



class KeywordReads:
    """``Vault``'s keyword reads (``Vault`` sets these attributes and the reads below)."""

    _filter_join: str  # the filtered join (chunks_filter where the store has it)
    _recall_fts: bool  # whether the vault holds recall_fts (migration 16)
    _kind_share: KindShare

    def _conn(self) -> Any:
        raise NotImplementedError

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def chunk_count(self) -> int:
        raise NotImplementedError

    def _ready_chunks(self, ids: Sequence[int]) -> set[int]:
        raise NotImplementedError

    def keyword(self, match: str, limit: int, filters: Filters,
                rescore: str = "", *, parallel: bool = True, newest: int = 0,
                otherwise: tuple[str, str, int] | None = None) -> list[tuple[int, float]]:
        """FTS5 BM25 lane: (chunk id, bm25) best first. ``match`` (and ``rescore``) must
        be safe expressions (``engine.retrieval.query.fts_query``).

        ``rescore`` holds words that find no rows of their own: the rows ``match`` finds
        that also hold one of them are scored again over both (``match AND rescore``),
        which is their BM25 for the whole query, since a word's BM25 weight depends only
        on the word and the row. FTS5 scores every row a query matches (about 1 us a row
        here), so common words kept out of ``match`` bound the rows scored (FTS5 still
        reads each rescoring word's rows once, to count them for its weight). With
        ``parallel``, the two queries run at the same time (``_bm25_rows``).

        ``newest`` (0: all; ``KeywordQuery.newest``): without filters, only the rows
        from the ``newest``-th newest row ``match`` finds up are scored (both queries;
        that row found by rowid, nothing scored), the window four times wider each time
        it answers fewer than ``limit`` rows (sources not ready), up to every row. A
        filter's rows need not lie among the newest (in ``bench.engine_scale``'s stores
        the sessions, recall's kinds, are the oldest fifth), so filtered queries score
        every row as before.
        ``otherwise`` (match, rescore, newest; ``KeywordQuery.otherwise``): the query
        asked instead when ``match`` finds no row (without filters there).

        A filter of session kinds (recall's) matches in ``recall_fts``, which holds those
        chunks alone, under the sessions' own BM25 statistics (``_fts_for``); recall's
        filter of every session kind and nothing else is no filter there, so it is
        bounded as a query without filters is.
        """
        if not match:
            return []
        fts, filters = self._fts_for(filters)
        if otherwise is not None and filters.empty \
                and self._nth_newest(fts, match, 1) is None:
            # ``match`` holds no row here (a document's words, in recall_fts): the other
            # words, planned as the query's were, find the rows
            match, rescore, newest = otherwise
        newest = max(newest, 2 * limit) if newest else 0  # a window that can answer
        while newest and filters.empty:
            lo = self._nth_newest(fts, match, newest)
            if lo is None:
                break
            got = self._keyword(fts, match, limit, filters, rescore, parallel, lo)
            if len(got) >= limit:
                return got
            newest *= 4
        return self._keyword(fts, match, limit, filters, rescore, parallel, 0)

    def _fts_for(self, filters: Filters) -> tuple[str, Filters]:
        """The FTS5 table a keyword query under ``filters`` matches in, and the filters
        left to test there: ``recall_fts`` when the kinds are among the session kinds it
        holds and no source has one of them as its own kind (its rows are then those
        the kinds pass), without the kinds when they are all of its kinds; else
        ``chunks_fts`` and ``filters``."""
        kinds = set(filters.kinds)
        if not (self._recall_fts and kinds and kinds <= set(RECALL_FTS_KINDS)) \
                or self._sources_of_kinds(filters.kinds):
            return "chunks_fts", filters
        if kinds == set(RECALL_FTS_KINDS):
            filters = dataclasses.replace(filters, kinds=())
        return "recall_fts", filters

    def _nth_newest(self, fts: str, match: str, n: int) -> int | None:
        """The rowid of the ``n``-th newest row ``match`` finds in ``fts`` (FTS5 walks
        its rows in rowid order, unscored); None when it finds fewer."""
        row = self._conn().execute(
            f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid DESC "
            "LIMIT 1 OFFSET ?", (match, n - 1)).fetchone()
        return None if row is None else int(row[0])

    def _keyword(self, fts: str, match: str, limit: int, filters: Filters, rescore: str,
                 parallel: bool, lo: int) -> list[tuple[int, float]]:
        """``keyword`` in the FTS5 table ``fts`` over the rows from rowid ``lo`` up (0:
        every row)."""
        above = "AND f.rowid >= ? " if lo else ""
        bound: list[Any] = [lo] if lo else []
        scored = f"SELECT f.rowid, bm25({fts}, 1.0, 0.4) AS r FROM {fts} f "
        plain = f"{scored}WHERE {fts} MATCH ? {above}ORDER BY r LIMIT ?"
        if filters.empty:
            rows = self._bm25_rows(plain, match, rescore, bound, limit * 2, parallel)
            ready = self._ready_chunks([r[0] for r in rows])
            return [(r[0], -r[1]) for r in rows if r[0] in ready][:limit]
        if filters.only_kinds:  # most chunks may pass: test the best rows only (kind_share)
            share = self._kind_share.share(self._conn(), self.chunk_count(), filters.kinds)
            if share >= OVERFETCH_MIN_SHARE:
                got = overfetch(
                    lambda n: self._bm25_rows(plain, match, rescore, [], n, parallel),
                    lambda ids: self.passing(ids, filters), limit, share)
                if got is not None:
                    return [(rid, -r) for rid, r in got]
        # each matched row is tested through the small chunks_filter index, not its own
        # row (which holds its text): about a third of the time in a big store; and by
        # its own kind before its source is read, when no source has one of the kinds
        # (recall's session kinds are chunks' kinds): a seek in sources less for each
        # row the filter drops (at 1M chunks, "file": 158,865 rows, 125 -> 105 ms)
        where, args = filters.sql(source_kinds=self._sources_of_kinds(filters.kinds))
        sql = (f"{scored}JOIN {self._filter_join} ON c.id = f.rowid "
               "JOIN sources s ON s.id = c.source_id "
               f"WHERE {fts} MATCH ? AND {where} ORDER BY r LIMIT ?")
        return [(r[0], -r[1])
                for r in self._bm25_rows(sql, match, rescore, args, limit, parallel)]

    def _sources_of_kinds(self, kinds: Sequence[str]) -> bool:
        """Whether a source has one of ``kinds`` as its own kind (a seek in migration
        15's index); False for no kinds."""
        if not kinds:
            return False
        return self._conn().execute(
            f"SELECT 1 FROM sources WHERE kind IN ({','.join('?' * len(kinds))}) LIMIT 1",
            list(kinds)).fetchone() is not None

    def _bm25_rows(self, sql: str, match: str, rescore: str, args: list[Any],
                   limit: int, parallel: bool = True) -> list[tuple[int, float]]:
        """``sql``'s (rowid, bm25) rows for ``match``, with ``rescore``'s words added to
        the scores of the rows that hold them (see ``keyword``); lowest bm25 first. When
        ``match`` finds no row, ``rescore``'s words find them instead."""
        conn = self._conn()
        # The rescoring query does not depend on the finding one's rows: it runs at the
        # same time, on another connection in a pool thread (SQLite releases the GIL
        # while it runs; at 100k chunks each takes 1-6 ms, mostly FTS5's scoring).
        second = (sql, (f"({match}) AND ({rescore})", *args, limit))
        both = _fts_pool().submit(self._query, *second) if rescore and parallel else None
        try:
            rows = conn.execute(sql, (match, *args, limit)).fetchall()
        finally:
            rescored = both.result() if both is not None else None  # never left running
        if rescore and not rows:
            # ``match`` holds no row here (its words are rare in the store, not in these
            # filters, or counted before they were deleted): the other words find the
            # rows, scored exactly, since the words of ``match`` hold none of them.
            match, rescore = rescore, ""
            rows = conn.execute(sql, (match, *args, limit)).fetchall()
        if not rescore:
            return [(r[0], r[1]) for r in rows]
        best = {r[0]: r[1] for r in rows}
        for rid, r in (rescored if rescored is not None else self._query(*second)):
            best[rid] = min(r, best.get(rid, 0.0))
        return sorted(best.items(), key=lambda x: (x[1], x[0]))[:limit]

    def passing(self, ids: Sequence[int], filters: Filters) -> set[int]:
        """Those of ``ids`` that pass ``filters``' SQL test (``Filters.sql``; their sources
        ready), no row built: each id's kind, source and time read from the small
        ``chunks_filter`` index (not the chunk's row, whose page holds its text), its own
        kind tested before its source is read when no source has one of the kinds. For a
        filter of kinds alone this is the decision ``Filters.matches`` makes on the rows
        ``chunks`` reads: the vector lane's over-fetched hits are tested so (recall at 1M
        chunks: about 345 a call, 0.8 -> 0.1 ms a hundred), and the keyword lane's."""
        if not ids:
            return set()
        table = "chunks c" if filters.reads_meta else self._filter_join
        where, args = filters.sql(source_kinds=self._sources_of_kinds(filters.kinds))
        out: set[int] = set()
        for part in id_batches(ids, 900):
            out.update(r[0] for r in self._conn().execute(
                f"SELECT c.id FROM {table} JOIN sources s ON s.id = c.source_id "
                f"WHERE c.id IN ({','.join('?' * len(part))}) AND {where}", [*part, *args],
            ).fetchall())
        return out
