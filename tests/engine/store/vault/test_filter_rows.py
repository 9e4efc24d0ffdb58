"""Vault.filter_rows: the rows the vector lane tests its over-fetched hits with carry
what ``Filters.matches`` reads and no text; every filter must decide on them exactly
as on the whole rows of ``Vault.chunks``."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.facade import ContextEngine
from engine.store.vault.rows import Filters
from tests.engine.recall.recall_helpers import ClaudeLines, text, write_lines


def _store(engine: ContextEngine, tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha\n\nthe parser note " * 20, encoding="utf-8")
    (docs / "sub" / "b.md").write_text("# Beta\n\nthe lexer note " * 20, encoding="utf-8")
    engine.wait(engine.ingest(paths=[str(docs)]))
    sessions = tmp_path / "projects"
    sessions.mkdir()
    for name, branch in (("s1", "main"), ("s2", "feature")):
        c = ClaudeLines(session=name, branch=branch)
        write_lines(sessions / f"{name}.jsonl", [
            c.user(f"fix the parser on {branch}"),
            c.assistant([text(f"Fixed the parser on {branch}. " + "y " * 30)])])
    engine.sync([str(sessions)])
    return docs


def test_filter_rows_decide_as_whole_rows(engine: ContextEngine, tmp_path: Path) -> None:
    docs = _store(engine, tmp_path)
    vault = engine.rt.vault
    ids = [r[0] for r in vault._conn().execute("SELECT id FROM chunks")]
    whole = vault.chunks(ids)
    assert len(whole) >= 4
    for f in (Filters(), Filters(kinds=("turn_pair",)), Filters(kinds=("document", "md")),
              Filters(branch="feature"), Filters(branch="main", kinds=("turn_pair",)),
              Filters(path_prefix="sub/"), Filters(path_prefix=str(docs / "sub")),
              Filters(since=0.0), Filters(since=4e9)):
        light = vault.filter_rows(ids, meta=f.reads_meta)
        assert set(light) == set(whole)
        assert {i: f.matches(r) for i, r in light.items()} == \
            {i: f.matches(r) for i, r in whole.items()}, f
        assert all(r.text == "" for r in light.values())
    decided = {f.matches(r) for f in (Filters(branch="feature"), Filters(path_prefix="sub/"))
               for r in whole.values()}
    assert decided == {True, False}  # the filters that read meta tell rows apart


def test_filter_rows_without_meta_read_the_filter_index_alone(
        engine: ContextEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter that reads no meta (recall's kinds, a time, an absolute path) tests the
    vector lane's hits through migration 12's ``chunks_filter`` index alone, never the
    chunk's own row (its page holds the text: half the time at 500k chunks), and decides
    as before; a store without the index (opened read-only before 12) reads the rows."""
    docs = _store(engine, tmp_path)
    vault = engine.rt.vault
    ids = [r[0] for r in vault._conn().execute("SELECT id FROM chunks")]
    whole = vault.chunks(ids)
    seen: list[str] = []
    conn = vault._conn()
    conn.set_trace_callback(seen.append)
    try:
        light = vault.filter_rows(ids, meta=False)
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in seen if s.lstrip().startswith("SELECT")]
    assert len(reads) == 1
    plan = " ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + reads[0]))
    assert "COVERING INDEX chunks_filter" in plan, plan
    assert set(light) == set(whole)
    for f in (Filters(kinds=("turn_pair",)), Filters(kinds=("document", "md")),
              Filters(since=0.0), Filters(since=4e9), Filters(path_prefix=str(docs / "sub"))):
        assert {i: f.matches(r) for i, r in light.items()} == \
            {i: f.matches(r) for i, r in whole.items()}, f
    monkeypatch.setattr(vault, "_filter_join", "chunks c")  # no index: the rows
    plain = vault.filter_rows(ids, meta=False)
    assert {i: (r.kind, r.source_id, r.time, r.source) for i, r in plain.items()} == \
        {i: (r.kind, r.source_id, r.time, r.source) for i, r in light.items()}
