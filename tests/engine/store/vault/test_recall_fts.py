"""recall_fts (migration 16): an FTS5 index of the session chunks alone, which recall's
keyword lane matches in, so that a common word's document rows are never matched and
joined only to be dropped by the kinds filter (issue 35)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import Config
from engine.facade import ContextEngine
from engine.flows.search.lanes import keyword_lane
from engine.recall.chunks import RECALL_CHUNK_KINDS
from engine.retrieval.fts_match import KeywordQuery, keyword_match
from engine.retrieval.query import analyze_query
from engine.store.vault import migrations
from engine.store.vault.core import Vault
from engine.store.vault.migrations import RECALL_FTS_KINDS
from engine.store.vault.rebuild import rebuild_keyword_index
from engine.store.vault.rows import Filters
from tests.engine.recall.recall_helpers import ClaudeLines, call_lines, text, write_lines
from tests.engine.store.vault.old_store import put_sources, vault_before

KEY = b"\x07" * 32
RECALL = Filters(kinds=RECALL_CHUNK_KINDS)


def test_the_store_layer_names_recalls_kinds() -> None:
    """The store layer cannot import engine.recall; its copy of the kinds (and migration
    16's literals) must be recall's."""
    assert RECALL_FTS_KINDS == RECALL_CHUNK_KINDS
    for kind in RECALL_CHUNK_KINDS:
        assert migrations.M16_RECALL_FTS.count(f"'{kind}'") == 5


def _session(folder: Path, name: str, words: str) -> None:
    claude = ClaudeLines(session=name)
    lines = [claude.user(f"Why does the {words} crane fail?"),
             claude.assistant([text(f"Thinking about the {words} crane.")], msg_id=f"{name}-m1")]
    lines += call_lines(claude, f"{name}-c1", "Bash", {"command": f"crane --{words}"},
                        f"error: {words} crane stuck", f"{name}-m2")
    lines += [claude.assistant([text(f"The {words} crane works now.\n```python\n"
                                     f"crane = '{words}'\n```")], msg_id=f"{name}-m3")]
    write_lines(folder / f"{name}.jsonl", lines)


def _indexed(vault: Vault) -> set[int]:
    """The rowids recall_fts holds (its docsize rows), its index checked against them."""
    vault._conn().execute("INSERT INTO recall_fts(recall_fts, rank) VALUES ('integrity-check', 0)")
    return {r[0] for r in vault._query("SELECT id FROM recall_fts_docsize")}


def _of_kinds(vault: Vault, kinds: tuple[str, ...] = RECALL_CHUNK_KINDS) -> set[int]:
    marks = ",".join("?" * len(kinds))
    return {r[0] for r in vault._query(f"SELECT id FROM chunks WHERE kind IN ({marks})", kinds)}


def _matched(vault: Vault, word: str) -> set[int]:
    return {r[0] for r in vault._query(
        "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", [f'"{word}"'])}


def _docs_of(vault: Vault, word: str) -> set[int]:
    return {r[0] for r in vault._query(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", [f'"{word}"'])}


def _mixed(engine: ContextEngine, tmp_path: Path) -> Path:
    """Two sessions and documents that all speak of cranes."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    _session(sessions, "s-one", "harbour")
    _session(sessions, "s-two", "tower")
    engine.sync([str(sessions)])
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.md").write_text(f"# Crane {i}\n\nThe crane manual, part {i}: error codes.\n"
                                       "```python\ncrane = 1\n```\n")
    engine.ingest(paths=[str(docs)], wait=True)
    return sessions


def test_recall_fts_holds_the_session_chunks_alone(engine: ContextEngine,
                                                   tmp_path: Path) -> None:
    sessions = _mixed(engine, tmp_path)
    vault = engine.rt.vault
    kinds = {r[0] for r in vault._query("SELECT DISTINCT kind FROM chunks")}
    assert {"turn_pair", "tool", "session_code"} <= kinds and kinds - set(RECALL_CHUNK_KINDS)
    held = _indexed(vault)
    assert held == _of_kinds(vault) and len(held) >= 6
    assert _matched(vault, "crane") == held  # no document row was indexed
    # a session deleted leaves it; the documents' rows never entered
    engine.delete(str(sessions / "s-one.jsonl"), wait=True)
    assert _indexed(vault) == _of_kinds(vault) and _of_kinds(vault) < held
    assert not _matched(vault, "harbour") and _matched(vault, "tower")
    engine.delete(str(tmp_path / "docs" / "d0.md"), wait=True)
    assert _indexed(vault) == _of_kinds(vault)
    # a repair rebuilds it from the session chunks alone, as it rebuilds chunks_fts
    with vault.write() as c:
        c.execute("INSERT INTO recall_fts(recall_fts) VALUES ('delete-all')")
    assert not _indexed(vault)
    rebuild_keyword_index(vault)
    assert _indexed(vault) == _of_kinds(vault) and _matched(vault, "tower")
    engine.repair()
    assert _indexed(vault) == _of_kinds(vault) and _matched(vault, "tower")


def test_recall_matches_in_recall_fts_and_other_filters_in_chunks_fts(
        engine: ContextEngine, tmp_path: Path) -> None:
    _mixed(engine, tmp_path)
    vault = engine.rt.vault
    seen: list[str] = []
    conn = vault._conn()
    conn.set_trace_callback(seen.append)
    try:
        for f in (RECALL, Filters(kinds=("tool",)), Filters(kinds=RECALL_CHUNK_KINDS, since=0.0)):
            got = vault.keyword('"crane"', 50, f)
            assert got and {vault.chunks([c])[c].kind for c, _ in got} <= set(f.kinds)
        recall_queries = [s for s in seen if "MATCH" in s]
        assert recall_queries and all("recall_fts MATCH" in s for s in recall_queries)
        # recall's filter is no filter in recall_fts: no join
        assert "JOIN" not in recall_queries[0] and "JOIN" in recall_queries[-1]
        seen.clear()
        docs = vault.keyword('"crane"', 50, Filters(kinds=("section",)))
        vault.keyword('"crane"', 50, Filters(kinds=("tool", "section")))
        vault.keyword('"crane"', 50, Filters())
    finally:
        conn.set_trace_callback(None)
    assert docs and all("chunks_fts MATCH" in s for s in seen if "MATCH" in s)


def test_a_source_of_a_session_kind_keeps_the_lane_in_chunks_fts(
        engine: ContextEngine, tmp_path: Path) -> None:
    """A filter of kinds passes a source of that kind whole (its chunks are of other
    kinds): recall_fts does not hold them, so the lane keeps to chunks_fts."""
    _mixed(engine, tmp_path)
    vault = engine.rt.vault
    with vault.write() as c:
        c.execute("UPDATE sources SET kind = 'tool' WHERE uri LIKE '%d1.md'")
    got = vault.keyword('"manual"', 50, Filters(kinds=("tool",)))
    assert len(got) == 1 and vault.chunks([got[0][0]])[got[0][0]].source.endswith("d1.md")


def test_a_transcript_store_answers_as_before(engine: ContextEngine, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """In a store of sessions alone recall_fts holds every chunk: the same rows and
    the same BM25 scores as chunks_fts under the kinds filter, under each plan."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i, words in enumerate(("harbour", "tower", "gantry error", "harbour error")):
        _session(sessions, f"s-{i}", words)
    engine.sync([str(sessions)])
    vault = engine.rt.vault
    assert _indexed(vault) == {r[0] for r in vault._query("SELECT id FROM chunks")}
    filters = (RECALL, Filters(kinds=("turn_pair", "tool")), Filters(kinds=("tool",)),
               Filters(kinds=RECALL_CHUNK_KINDS, since=0.0))
    queries = (('"crane"', ""), ('"error"', '"harbour"'), ('"harbour" OR "tower"', ""),
               ('"absent"', '"gantry"'))
    now = {(f, q): vault.keyword(q[0], k, f, q[1]) for f in filters for q in queries
           for k in (3, 50)}
    monkeypatch.setattr(vault, "_recall_fts", False)  # as before migration 16
    for (f, q), got in now.items():
        assert got, (f, q)
    before = {(f, q): vault.keyword(q[0], k, f, q[1]) for f in filters for q in queries
              for k in (3, 50)}
    assert now == before


def test_a_store_at_schema_15_upgrades_and_answers(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "vault.db"
    old = vault_before(monkeypatch, path, KEY, 16)
    with old.write() as c:
        put_sources(c, ((1, "transcript"), (2, "markdown")))
        for i, (sid, kind) in enumerate(((1, "turn_pair"), (1, "tool"), (2, "section"),
                                         (1, "thinking"), (2, "code"), (1, "session_code"))):
            c.execute("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash,"
                      " meta) VALUES (?, ?, ?, ?, 3, 'h', ?)",
                      (sid, i, kind, f"the crane {kind}", json.dumps({"session": "s"})))
    assert not old._recall_fts
    before = old.keyword('"crane"', 10, RECALL)
    old.close()
    monkeypatch.undo()

    new = Vault(path, KEY)
    assert _indexed(new) == _of_kinds(new) == {1, 2, 4, 6}
    assert {c for c, _ in new.keyword('"crane"', 10, RECALL)} == {c for c, _ in before}
    with new.write() as c:  # the triggers keep it after the upgrade
        c.execute("DELETE FROM chunks WHERE id IN (1, 3)")
        c.execute("INSERT INTO chunks(source_id, ordinal, kind, text, tokens, content_hash) "
                  "VALUES (1, 9, 'tool', 'crane again', 2, 'h'), "
                  "(2, 9, 'section', 'crane doc', 2, 'h')")
    assert _indexed(new) == _of_kinds(new) == {2, 4, 6, 7}
    new.close()


def _bounded(**search: object) -> Config:
    return Config().with_overrides({"search": {"keyword_prune_min_chunks": 10, **search}})


def test_the_newest_bound_applies_to_recalls_lane(engine: ContextEngine,
                                                  tmp_path: Path) -> None:
    """Recall's filter (every session kind, nothing else) is no filter in recall_fts, so
    a common word's rows there are bounded as an unfiltered query's are: only its newest
    ``keyword_scored_max`` session rows are scored (documents newer than them are not
    counted); with another filter part, every row is scored as before."""
    _crane_sessions(engine, tmp_path, [], [f"# Crane {i}\n\nThe crane manual {i}.\n"
                                           for i in range(12)])
    rt = engine.rt
    cfg = _bounded(keyword_max_df=1.0, keyword_scored_max=8)
    assert len(_matched(rt.vault, "crane")) >= 30
    full = _the_newest_crane_rows_best(
        rt.vault, keyword_lane(rt, analyze_query("crane", rt.cfg.query), 4, RECALL, cfg))
    since = Filters(kinds=RECALL_CHUNK_KINDS, since=0.0)
    every = keyword_lane(rt, analyze_query("crane", rt.cfg.query), 4, since, cfg)
    assert every == rt.vault.keyword('"crane"', 4, since)
    assert [c for c, _ in every] == sorted(full, key=lambda c: (-full[c], c))[:4]


def _the_newest_crane_rows_best(vault: Vault, got: list[tuple[int, float]]) -> dict[int, float]:
    """Check that ``got`` (4 hits) is the best of the 8 newest session rows holding
    "crane", each with its whole-query BM25; the unbounded scores, returned."""
    full = dict(vault.keyword('"crane"', 100, RECALL))
    window = set(sorted(_matched(vault, "crane"))[-8:])
    assert len(got) == 4 and {c for c, _ in got} <= window
    assert [c for c, _ in got] == sorted(window, key=lambda c: (-full[c], c))[:4]
    assert all(abs(s - full[c]) < 1e-9 for c, s in got)
    return full


def _crane_sessions(engine: ContextEngine, tmp_path: Path, first: list[str],
                    texts: list[str] | None = None) -> None:
    """``first`` (tool results, the oldest rows), then 30 crane rows of differing lengths;
    then documents of ``texts`` (by default two that speak of a clash, a word no session
    holds)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    claude = ClaudeLines(session="s-crane")
    lines: list[str] = []
    for i, out in enumerate(first):
        lines += call_lines(claude, f"k{i}", "Bash", {"command": f"kubectl get {i}"}, out, f"n{i}")
    for i in range(30):
        lines += call_lines(claude, f"c{i}", "Bash", {"command": f"crane lift {i}"},
                            "cargo " * i + "crane", f"m{i}")  # lengths differ: no ties
    write_lines(sessions / "s.jsonl", lines)
    engine.sync([str(sessions)])
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, body in enumerate(texts or [f"# Clash {i}\n\nA clash of cranes, part {i}.\n"
                                       for i in range(2)]):
        (docs / f"d{i}.md").write_text(body)
    engine.ingest(paths=[str(docs)], wait=True)


def test_a_document_word_hands_recalls_lane_to_the_others_under_their_bound(
        engine: ContextEngine, tmp_path: Path) -> None:
    """A question's rarest word may be held by documents alone ("clash" at 1M): it finds
    no row in recall_fts, so its other words find the rows there, planned as the query's
    were (``KeywordQuery.otherwise``): a common word alone is bounded as finding words
    are (its newest ``keyword_scored_max`` session rows scored, whole-query BM25 as
    before), not scored in every session row (150 ms at 1M)."""
    _crane_sessions(engine, tmp_path, [])
    rt = engine.rt
    cfg = _bounded(keyword_max_df=1.0, keyword_row_budget=3, keyword_scored_max=8)
    plan = keyword_match(analyze_query("clash crane", rt.cfg.query), cfg.search, rt.vault)
    assert (plan.match, plan.rescore, plan.newest) == ('"clash"', '"crane"', 0)
    assert plan.otherwise == KeywordQuery('"crane"', "", 8)
    _the_newest_crane_rows_best(
        rt.vault, keyword_lane(rt, analyze_query("clash crane", rt.cfg.query), 4, RECALL, cfg))
    # under chunks_fts (no filter) "clash" finds its documents: the plan is kept
    assert {c for c, _ in keyword_lane(rt, analyze_query("clash crane", rt.cfg.query), 4,
                                       Filters(), cfg)} == _docs_of(rt.vault, "clash")


def test_the_other_words_rarest_still_find_when_a_document_word_finds_none(
        engine: ContextEngine, tmp_path: Path) -> None:
    """Of the other words, a rare one ("kubelet", in the three oldest session rows) finds
    the rows again and the common one only rescores: the kubelet rows come first, as
    when every other word found rows unbounded, not the newest crane rows."""
    _crane_sessions(engine, tmp_path, [f"the kubelet crane failed {i}" for i in range(3)])
    rt = engine.rt
    cfg = _bounded(keyword_max_df=1.0, keyword_row_budget=3, keyword_scored_max=8)
    ask = analyze_query("clash kubelet crane", rt.cfg.query)
    plan = keyword_match(ask, cfg.search, rt.vault)
    assert (plan.match, plan.rescore) == ('"clash"', '"kubelet" OR "crane"')
    assert plan.otherwise == KeywordQuery('"kubelet"', '"crane"', 0)
    kubelet = _matched(rt.vault, "kubelet")
    assert len(kubelet) == 3 and max(kubelet) < sorted(_matched(rt.vault, "crane"))[-8]
    got = keyword_lane(rt, ask, 4, RECALL, cfg)
    whole = rt.vault.keyword('"kubelet" OR "crane"', 4, RECALL)
    assert {c for c, _ in got} == kubelet == {c for c, _ in whole[:3]}
    assert got == whole[:3]


def test_a_chunk_whose_kind_changes_moves_in_or_out_of_recall_fts(
        engine: ContextEngine, tmp_path: Path) -> None:
    """No code updates a chunk's kind today, but a migration did once (9): the update
    trigger keeps recall_fts to the session kinds' rows, its index sound."""
    _mixed(engine, tmp_path)
    vault = engine.rt.vault
    tool = min(_of_kinds(vault, ("tool",)))
    doc = min(_of_kinds(vault, ("section",)))
    with vault.write() as c:
        c.execute("UPDATE chunks SET kind = 'section' WHERE id = ?", (tool,))
        c.execute("UPDATE chunks SET kind = 'tool' WHERE id = ?", (doc,))
    assert _indexed(vault) == _of_kinds(vault)
    assert tool not in _indexed(vault) and doc in _indexed(vault)
