"""The recency lane's read: chunk ids newest first, in two index-friendly parts (issue
12), and whether a filter can pass any chunk without a time (migration 11's
``chunks_untimed_kind``), cached on the vault until its next write."""

from __future__ import annotations

from sqlcipher3 import dbapi2 as sqlite

from engine.store.vault.core import Vault
from engine.store.vault.rows import Filters


def recent(vault: Vault, limit: int, filters: Filters) -> list[int]:
    """Recency lane: chunk ids, newest first (a chunk's time, else its source's).

    Read in two index-friendly parts and merged, instead of one sort over every
    chunk (230 ms at 100k chunks; issue 12): chunks with a time through the
    ``chunks_time`` index, and chunks without one source by source, newest source
    first, until ``limit`` of them are in (sources of equal time together).
    """
    if limit <= 0:
        return []
    where, args = filters.sql()
    conn = vault._conn()
    found: list[tuple[float, int]] = [
        (t, cid) for cid, t in conn.execute(
            f"SELECT c.id, c.time FROM chunks c JOIN sources s ON s.id = c.source_id "
            f"WHERE c.time IS NOT NULL AND {where} ORDER BY c.time DESC, c.id DESC LIMIT ?",
            (*args, limit))]
    if not has_untimed(vault, tuple(filters.kinds)):  # every chunk the filter passes has
        # its time (a store of sessions; recall's session kinds beside documents)
        return [cid for _, cid in found[:limit]]
    untimed = 0
    block: list[int] = []
    block_time: float | None = None
    size = 1  # sources per query: doubling, so a filter that skips most stays cheap
    # a source's untimed chunks through migration 14's partial index: a source whose
    # chunks all have a time (a session's) costs a seek, not a read of every chunk's row
    # (at 1M chunks a temporal query read all 191k session chunks so: 0.65 s). Without
    # it (a store opened read-only before 14), +c.time: look chunks up by source; the
    # time index would scan them all.
    indexed = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND "
                           "name = 'chunks_untimed_source'").fetchone() is not None
    table, untimed_test = (("chunks c INDEXED BY chunks_untimed_source", "c.time IS NULL")
                           if indexed else ("chunks c", "+c.time IS NULL"))

    def take(ids: list[int]) -> int:
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT c.id, COALESCE(s.created_at, s.ingested_at, 0) AS t FROM {table} "
            f"JOIN sources s ON s.id = c.source_id "
            f"WHERE {untimed_test} AND c.source_id IN ({marks}) AND {where} "
            "ORDER BY t DESC, c.id DESC LIMIT ?", (*ids, *args, limit)).fetchall()
        found.extend((t, cid) for cid, t in rows)
        return len(rows)

    for sid, t in conn.execute("SELECT id, COALESCE(created_at, ingested_at, 0) AS t "
                               "FROM sources ORDER BY t DESC, id DESC"):
        # a block ends only where the time changes, so that each block's own newest
        # ``limit`` are exact and blocks come newest first
        if len(block) >= size and t != block_time:
            untimed += take(block)
            block, size = [], min(size * 2, 256)
            if untimed >= limit:
                break
        block.append(sid)
        block_time = t
    else:
        if block:
            take(block)
    found.sort(reverse=True)
    return [cid for _, cid in found[:limit]]


def has_untimed(vault: Vault, kinds: tuple[str, ...] = ()) -> bool:
    """Whether any chunk lacks a time, or (``kinds``) any that a filter of those kinds
    passes (its own kind or its source's): seeks in the ``chunks_time`` and
    ``chunks_untimed_kind`` indexes, cached until the next write. Without one, the
    recency lane skips its source-by-source part, which read every chunk of a store
    of sessions to find none (21 ms at 48,893 chunks), and every document chunk for a
    filter of session kinds (1.5 s at 500k chunks)."""
    gen = vault.generation
    if vault._untimed[0] != gen:
        vault._untimed = (gen, {})
    known = vault._untimed[1]
    if kinds not in known:
        known[kinds] = _read_untimed(vault, kinds)
    return known[kinds]


def _read_untimed(vault: Vault, kinds: tuple[str, ...]) -> bool:
    conn = vault._conn()
    if not kinds:
        return conn.execute("SELECT 1 FROM chunks WHERE time IS NULL LIMIT 1"
                            ).fetchone() is not None
    marks = ",".join("?" * len(kinds))
    try:  # (the planner would take chunks_time, every untimed chunk, for this)
        seek = conn.execute(f"SELECT 1 FROM chunks INDEXED BY chunks_untimed_kind WHERE "
                            f"time IS NULL AND kind IN ({marks}) LIMIT 1", kinds)
    except sqlite.OperationalError:  # a store opened read-only, before migration 11
        seek = conn.execute(f"SELECT 1 FROM chunks WHERE time IS NULL AND kind IN "
                            f"({marks}) LIMIT 1", kinds)
    if seek.fetchone() is not None:
        return True
    return conn.execute(
        f"SELECT 1 FROM sources s WHERE s.kind IN ({marks}) AND EXISTS (SELECT 1 FROM "
        "chunks c WHERE c.source_id = s.id AND c.time IS NULL) LIMIT 1", kinds
    ).fetchone() is not None
