"""The keyword lane under a kinds filter that most chunks pass: the best unfiltered
rows are tested instead of every matched row joined to its source, and the rows it
returns are the joined query's, also when the best rows are of other kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.store.vault.keyword_reads as vault_module
from engine.facade import ContextEngine
from engine.store.vault.kind_share import KindShare, overfetch
from engine.store.vault.rows import Filters

# -- overfetch, on plain rows ------------------------------------------------------------


def _rows(n: int) -> list[tuple[int, float]]:
    return [(i, -float(n - i)) for i in range(n)]  # best (lowest bm25) first


def test_overfetch_keeps_the_best_passing_rows_in_order() -> None:
    rows = _rows(100)
    got = overfetch(lambda n: rows[:n], lambda ids: {i for i in ids if i % 3}, 10, 0.66)
    assert got == [r for r in rows if r[0] % 3][:10]


def test_overfetch_cannot_tell_when_too_few_of_the_fetched_rows_pass() -> None:
    rows = _rows(500)  # one fetched row passes, the rest past the fetch: ask the join
    assert overfetch(lambda n: rows[:n], lambda ids: {i for i in ids if i == 0 or i >= 400},
                     10, 0.9) is None


def test_overfetch_answers_when_every_matched_row_was_fetched() -> None:
    rows = _rows(6)  # fewer rows than asked for: all were seen, so 2 passing are all
    got = overfetch(lambda n: rows[:n], lambda ids: {1, 4}, 10, 0.9)
    assert got == [rows[1], rows[4]]


def test_overfetch_leaves_a_query_with_no_passing_row_to_the_joined_one() -> None:
    # the joined query then lets the rescoring words find rows: not the same as none
    rows = _rows(6)
    assert overfetch(lambda n: rows[:n], lambda ids: set(), 10, 0.9) is None


# -- the vault's keyword lane --------------------------------------------------------------


def _store(engine: ContextEngine, tmp_path: Path) -> None:
    """Conversation lines (80 of 140 chunks) and 60 documents, 20 of which say "walrus"
    more often than every line but one: the best unfiltered rows for "walrus" are that
    line, then only documents, then the lines that say it once."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(60):
        body = ("the walrus rested on a grey beach of stones and shells. " * 10 if i < 20
                else "harbour crane at dawn. " * 30)
        (folder / f"d{i}.md").write_text(f"# Port {i}\n\n{body}")
    engine.ingest(paths=[str(folder)], wait=True)
    lines = [{"speaker": "ann", "text": "Walrus walrus walrus walrus!"}]
    lines += [{"speaker": "ann", "text": f"Note {i}: a walrus swam by the crane."}
              for i in range(5)]
    lines += [{"speaker": "ann", "text": f"Note {i}: the harbour crane lifted cargo {i}."}
              for i in range(34)]
    lines += [{"speaker": "bob", "text": f"Line {i}: a quiet day by the sea."} for i in range(40)]
    engine.wait(engine.ingest_conversation(lines, title="log", uri="t:log"))


def _joined(monkeypatch: pytest.MonkeyPatch, engine: ContextEngine, match: str,
            limit: int, filters: Filters) -> list[tuple[int, float]]:
    with monkeypatch.context() as m:
        m.setattr(vault_module, "OVERFETCH_MIN_SHARE", 2.0)  # never: every row joined
        return engine.rt.vault.keyword(match, limit, filters)


@pytest.mark.parametrize("limit", [2, 3])
def test_kinds_filter_returns_the_joined_querys_rows(
        engine: ContextEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        limit: int) -> None:
    _store(engine, tmp_path)
    vault = engine.rt.vault
    conversation = Filters(kinds=("conversation",))
    share = vault._kind_share.share(vault._conn(), vault.chunk_count(), conversation.kinds)
    assert share >= vault_module.OVERFETCH_MIN_SHARE  # the fast plan applies
    answers: list[bool] = []
    real = vault_module.overfetch

    def spy(*args: object, **kw: object) -> object:
        got = real(*args, **kw)  # type: ignore[arg-type]
        answers.append(got is not None)
        return got
    monkeypatch.setattr(vault_module, "overfetch", spy)
    for match in ("walrus", "crane OR cargo", "quiet", "cargo"):
        fast = vault.keyword(match, limit, conversation)
        assert fast == _joined(monkeypatch, engine, match, limit, conversation), match
        assert fast and all(vault.chunks([r])[r].source_kind == "conversation"
                            for r, _ in fast)
    # both plans ran: the fetched rows answered "quiet" (only conversation says it),
    # the join "walrus" (one line, then documents: too few of the fetched rows pass)
    assert True in answers and False in answers


def test_kind_share_is_counted_again_once_the_store_has_grown(
        engine: ContextEngine, tmp_path: Path) -> None:
    _store(engine, tmp_path)
    vault = engine.rt.vault
    share = KindShare()
    before = share.share(vault._conn(), vault.chunk_count(), ("document",))
    assert 0 < before < 0.5
    folder = tmp_path / "more"
    folder.mkdir()
    for i in range(200):
        (folder / f"m{i}.md").write_text(f"# More {i}\n\nA note on tides number {i}.")
    engine.ingest(paths=[str(folder)], wait=True)
    after = share.share(vault._conn(), vault.chunk_count(), ("document",))
    assert after > 0.5  # the documents are most of the store now, and counted so


def test_the_filtered_query_tests_rows_through_the_filter_index(
        engine: ContextEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The joined query reads each matched chunk's kind, source and time from migration
    12's small index, not from the chunk's row (which holds its text: three times the
    time at 500k chunks), and returns the same rows; a store without the index (opened
    read-only before the migration) runs the plain join."""
    _store(engine, tmp_path)
    vault = engine.rt.vault
    seen: list[str] = []
    queries: list[list[tuple[int, float]]] = []
    filters = [Filters(kinds=("conversation",)), Filters(kinds=("document",)),
               Filters(kinds=("section", "turn_pair"), since=0.0)]
    conn = vault._conn()
    conn.set_trace_callback(seen.append)
    try:
        for f in filters:
            queries.append(_joined(monkeypatch, engine, "walrus OR crane", 5, f))
    finally:
        conn.set_trace_callback(None)
    plans = [s for s in seen if "chunks_fts MATCH" in s and "JOIN" in s]
    assert plans and all("INDEXED BY chunks_filter" in s for s in plans), plans
    assert all(queries)
    monkeypatch.setattr(vault, "_filter_join", "chunks c")  # no index: the plain join
    for f, got in zip(filters, queries, strict=True):
        assert _joined(monkeypatch, engine, "walrus OR crane", 5, f) == got
