"""The keyword lane's filtered query (``Vault.keyword``) tests a filter of kinds on each
matched row's own kind before it reads the row's source, when no source has one of the
kinds (recall's session kinds are chunks' kinds): the rows FTS5 matches that the filter
drops are never looked up in ``sources``. Its rows, scores and order are those of the
query that tests the source's kind too (the lane's former query), with source kinds in
the filter or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.store.vault.core import Vault
from engine.store.vault.rows import Filters
from tests.engine.store.vault.vm_steps import vm_steps

T0 = 1_700_000_000.0


def _former(vault: Vault, match: str, limit: int, filters: Filters) -> list[tuple[int, float]]:
    """The lane's former filtered query: every matched row's source read to test it."""
    where, args = filters.sql()
    rows = vault._conn().execute(
        "SELECT f.rowid, bm25(chunks_fts, 1.0, 0.4) AS r FROM chunks_fts f "
        f"JOIN {vault._filter_join} ON c.id = f.rowid JOIN sources s ON s.id = c.source_id "
        f"WHERE chunks_fts MATCH ? AND {where} ORDER BY r LIMIT ?", (match, *args, limit)
    ).fetchall()
    return [(r[0], -r[1]) for r in rows]


@pytest.fixture
def vault(tmp_path: Path) -> Any:
    v = Vault(tmp_path / "vault.db", b"\x07" * 32)
    docs, per, talks = 200, 10, 5
    with v.write() as c:
        c.executemany(
            "INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
            "created_at, state) VALUES (?, ?, 'document', 't', 'md', 'h', 0, ?, 'ready')",
            [(i + 1, f"doc{i}", T0 + i) for i in range(docs)])
        c.executemany(
            "INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash) "
            "VALUES (?, ?, 'section', ?, 4, 'h')",
            [(i + 1, j, "the harbour tides " + "word " * ((i * 7 + j) % 13))
             for i in range(docs) for j in range(per)])
        c.executemany(
            "INSERT INTO sources(id, uri, kind, title, fmt, content_hash, ingested_at, "
            "state) VALUES (?, ?, 'transcript', 't', 'transcript', 'h', 0, ?)",
            [(5000 + t, f"talk{t}", "pending" if t == 4 else "ready") for t in range(talks)])
        c.executemany(
            "INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash, time) "
            "VALUES (?, ?, ?, ?, 3, 'h', ?)",
            [(5000 + t, j, ("turn", "tool_call")[j % 2],
              "we sailed the harbour " + "again " * ((t + j) % 5), T0 + 10 * t + j)
             for t in range(talks) for j in range(6)])
    yield v
    v.close()


def test_a_filter_of_chunk_kinds_reads_no_source_of_the_rows_it_drops(vault: Vault) -> None:
    session = Filters(kinds=("turn", "tool_call"))
    vault.keyword('"tides"', 1, session)  # the store's kinds counted (kind_share), once
    got, steps = vm_steps(vault, lambda: vault.keyword('"harbour"', 10, session))
    former, former_steps = vm_steps(vault, lambda: _former(vault, '"harbour"', 10, session))
    assert got == former and len(got) == 10  # the pending talk's chunks are left out
    assert {r.source_id for r in vault.chunks([i for i, _ in got]).values()} <= {
        5000, 5001, 5002, 5003}
    # 2,000 document rows matched and dropped: their sources were read before
    assert steps < 0.85 * former_steps, (steps, former_steps)


@pytest.mark.parametrize("filters", [
    Filters(kinds=("turn",), since=T0), Filters(kinds=("document",), since=0.0),
    Filters(kinds=("document", "turn"), since=0.0), Filters(kinds=("section",), until=T0 + 50),
    Filters(kinds=("nothing",), since=0.0), Filters(since=T0 + 30)])
def test_the_filtered_rows_are_the_former_query_s(vault: Vault, filters: Filters) -> None:
    for match, limit in (('"harbour"', 10), ('"harbour"', 500), ('"tides" OR "sailed"', 7)):
        assert vault.keyword(match, limit, filters) == _former(vault, match, limit, filters)
