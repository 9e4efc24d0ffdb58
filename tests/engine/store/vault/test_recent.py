"""The recency lane (Vault.recent) reads chunks with a time through its index and
chunks without one source by source; it must give exactly what one sort of every
chunk by its own time, else its source's, gives (the lane's former query), with
sources of equal time, filters, and limits that end inside a source."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from engine.facade import ContextEngine
from engine.store.vault import recency
from engine.store.vault.core import Vault
from engine.store.vault.rows import Filters
from tests.engine.store.vault.vm_steps import vm_steps

T0 = 1_700_000_000.0


def _reference(vault: Vault, limit: int, filters: Filters) -> list[int]:
    where, args = filters.sql()
    rows = vault._conn().execute(
        f"SELECT c.id FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {where} "
        "ORDER BY COALESCE(c.time, s.created_at, s.ingested_at) DESC, c.id DESC LIMIT ?",
        (*args, limit)).fetchall()
    return [r[0] for r in rows]


def _documents(c: Any, docs: int, per: int) -> None:
    """``docs`` ready document sources (ids 1..docs, created 10 s apart from T0), each
    with ``per`` chunks without a time, written through the vault's write connection."""
    c.executemany(
        "INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
        "created_at, state) VALUES (?, ?, 'document', 't', 'md', 'h', 0, ?, 'ready')",
        [(i + 1, f"doc{i}", T0 + 10 * i) for i in range(docs)])
    c.executemany(
        "INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash) "
        "VALUES (?, ?, 'section', 'harbour tides', 2, 'h')",
        [(i + 1, j) for i in range(docs) for j in range(per)])


@pytest.fixture
def mixed(engine: ContextEngine) -> ContextEngine:
    rng = random.Random(5)
    for i in range(14):  # documents: no chunk time, their source's time counts
        body = "\n\n".join(f"Section {j} of note {i}: " + "words " * rng.randint(40, 160)
                           for j in range(rng.randint(1, 4)))
        engine.wait(engine.ingest(text=body, title=f"note {i}", external_id=f"n{i}"))
    for n in range(4):  # conversations: every turn has its time
        turns = [{"speaker": "A" if j % 2 else "B", "text": f"turn {j} of chat {n}",
                  "time": T0 + n * 1000 + j} for j in range(6)]
        engine.wait(engine.ingest_conversation(turns, title=f"chat {n}", uri=f"chat:{n}"))
    for i in (0, 1, 2, 5):  # new text for some notes (new sources replace the old)
        engine.wait(engine.ingest(text="Rewritten: " + "other words " * (60 * (i + 1)),
                                  title=f"note {i}", external_id=f"n{i}"))
    # Source times in shuffled order (a newer source may hold older ids), in threes
    # (sources of equal time), some between the conversations' turn times.
    with engine.rt.vault.write() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM sources WHERE kind != 'conversation'"
                                          " ORDER BY id")]
        times = [T0 + 500 * (k // 3) for k in range(len(ids))]
        rng.shuffle(times)
        for sid, t in zip(ids, times, strict=True):
            conn.execute("UPDATE sources SET created_at = ? WHERE id = ?", (t, sid))
    return engine


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 7, 9, 13, 17, 30, 200])
def test_recent_is_the_one_sort_of_every_chunk(mixed: ContextEngine, limit: int) -> None:
    vault = mixed.rt.vault
    n = vault._conn().execute("SELECT count(*), sum(time IS NULL) FROM chunks").fetchone()
    assert n[0] > 40 and 0 < n[1] < n[0]  # both kinds of chunk are there
    assert recency.recent(vault, limit, Filters()) == _reference(vault, limit, Filters())


def test_recent_with_filters(mixed: ContextEngine) -> None:
    vault = mixed.rt.vault
    some = tuple(r[0] for r in vault._conn().execute("SELECT id FROM sources ORDER BY id")
                 )[::3]
    for f in (Filters(kinds=("conversation",)), Filters(kinds=("text",)),
              Filters(source_ids=some), Filters(since=T0 + 900), Filters(until=T0 + 1200),
              Filters(path_prefix="chat:")):
        for limit in (1, 4, 30):
            assert recency.recent(vault, limit, f) == _reference(vault, limit, f), (f, limit)
    assert recency.recent(vault, 0, Filters()) == []


def test_recent_without_migration_14s_indexes(mixed: ContextEngine) -> None:
    """A store opened read-only before migration 14 lacks its two indexes: the lane reads
    each source's untimed chunks by source (``+c.time``, no ``INDEXED BY`` a missing
    index) and sorts the sources itself, with the same answers."""
    vault = mixed.rt.vault
    with vault.write() as conn:
        conn.execute("DROP INDEX chunks_untimed_source")
        conn.execute("DROP INDEX sources_newest")
    for f in (Filters(), Filters(kinds=("text",)), Filters(since=T0 + 900)):
        for limit in (1, 4, 30, 200):
            assert recency.recent(vault, limit, f) == _reference(vault, limit, f), (f, limit)


def test_a_store_of_timed_chunks_only_then_a_document(engine: ContextEngine) -> None:
    """Every chunk timed (a store of sessions): the lane skips the source-by-source part
    and is still exact; a document added later (no chunk time, its source's newer time)
    is found at once: the "no untimed chunk" answer does not outlive a write."""
    for n in range(3):
        turns = [{"speaker": "A" if j % 2 else "B", "text": f"turn {j} of chat {n}",
                  "time": T0 + n * 1000 + j} for j in range(5)]
        engine.wait(engine.ingest_conversation(turns, title=f"chat {n}", uri=f"chat:{n}"))
    vault = engine.rt.vault
    assert recency.recent(vault, 7, Filters()) == _reference(vault, 7, Filters())
    assert not recency.has_untimed(vault)
    engine.wait(engine.ingest(text="A note written after the chats. " * 20, title="note"))
    assert recency.has_untimed(vault)
    got = recency.recent(vault, 7, Filters())
    assert got == _reference(vault, 7, Filters())
    note = {r.id for r in vault.chunks(got).values() if r.kind != "conversation"}
    assert note and got[0] in note  # the newest source's chunks come first


def test_a_filter_of_session_kinds_skips_the_documents_without_reading_them(
        tmp_path: Path) -> None:
    """Recall's recency lane asks for session kinds only; a store with many document
    sources (no chunk time) must not be walked source by source to find that none of
    their chunks passes (1.5 s a recall at 500k chunks): migration 11's index answers."""
    vault = Vault(tmp_path / "vault.db", b"\x07" * 32)
    docs, per = 300, 10
    try:
        with vault.write() as c:
            _documents(c, docs, per)
            c.execute("INSERT INTO sources(id, uri, kind, title, fmt, content_hash, "
                      "ingested_at, state) VALUES (9999, 'talk', 'transcript', 't', "
                      "'transcript', 'h', 0, 'ready')")
            c.executemany("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, "
                          "content_hash, time) VALUES (9999, ?, 'turn', 'hello', 1, 'h', ?)",
                          [(j, T0 + j) for j in range(5)])
        session = Filters(kinds=("turn", "tool_call"))
        got, steps = vm_steps(vault, lambda: recency.recent(vault, 50, session))
        assert got == _reference(vault, 50, session) and len(got) == 5
        assert steps < docs * per // 100, f"{steps * 100} VM steps: documents read"
        # a filter that passes the documents still walks them, exactly
        assert recency.recent(vault, 7, Filters(kinds=("section",))) == _reference(
            vault, 7, Filters(kinds=("section",)))
        assert recency.recent(vault, 7, Filters(kinds=("document",))) == _reference(
            vault, 7, Filters(kinds=("document",)))
    finally:
        vault.close()


def test_sources_whose_chunks_all_have_a_time_are_passed_without_reading_them(
        tmp_path: Path) -> None:
    """A temporal query without a filter in a store whose newest sources are sessions
    (every chunk timed) and whose documents (no chunk time) are older: the lane's
    source-by-source part looks for untimed chunks newest source first, and must pass
    each session at the cost of a seek, not read all its chunks (at 1M chunks: 191k
    session chunks, 0.65 s a query): migration 14's partial index answers."""
    vault = Vault(tmp_path / "vault.db", b"\x07" * 32)
    docs, sessions, per = 20, 60, 200
    try:
        with vault.write() as c:
            _documents(c, docs, 3)
            c.executemany(
                "INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
                "created_at, state) VALUES (?, ?, 'transcript', 't', 'transcript', 'h', 0, ?, "
                "'ready')", [(1000 + s, f"talk{s}", T0 + 10_000 + s) for s in range(sessions)])
            c.executemany(
                "INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash, "
                "time) VALUES (?, ?, 'turn', 'hello', 1, 'h', ?)",
                [(1000 + s, j, T0 - 100_000 + s * per + j) for s in range(sessions)
                 for j in range(per)])
        for limit in (5, 30):
            got, steps = vm_steps(vault, partial(recency.recent, vault, limit, Filters()))
            assert got == _reference(vault, limit, Filters())
            assert len(got) == limit and all(i <= docs * 3 for i in got[:limit])  # the docs'
            assert steps < sessions * per // 100, f"{steps * 100} VM steps: sessions read"
    finally:
        vault.close()
