"""The keyword lane's bounds in big stores: common words leave the FTS query, and past
a row budget the rarer words find the rows while the others only rescore them."""

from __future__ import annotations

import pytest

from engine.config import Config
from engine.facade import ContextEngine
from engine.flows.search.lanes import keyword_lane
from engine.retrieval.fts_match import keyword_match
from engine.retrieval.query import analyze_query
from engine.store.vault.fts_terms import TOKENIZE, index_tokens
from engine.store.vault.rows import Filters


def _log(engine: ContextEngine, lines: list[str], uri: str = "t:log") -> None:
    engine.wait(engine.ingest_conversation(
        [{"speaker": "log", "text": t} for t in lines], title="log", uri=uri))


def _bounded(**search: object) -> Config:
    return Config().with_overrides({"search": {"keyword_prune_min_chunks": 10, **search}})


def _harbour_log(engine: ContextEngine) -> None:
    lines = [f"Note {i}: a quiet day." for i in range(40)]
    lines += [f"Note {i}: the harbour crane lifted cargo." for i in range(10)]
    lines += [f"Note {i}: a ferry crossed at dawn." for i in range(8)]
    lines += ["The walrus watched the ferry.", "The walrus slept by the harbour crane.",
              "A walrus, alone."]
    _log(engine, lines)


def test_word_counts_are_read_under_the_tokens_fts5_makes(engine: ContextEngine) -> None:
    lines = [f"Entry {i}: the parser uses tokens." for i in range(30)]
    lines += ["A café isn't open.", "Memories of archives."]
    _log(engine, lines)
    vault = engine.rt.vault
    # "uses" is indexed as "us" and "memories" as "memori": neither stem is a prefix
    # that a guess from the word's own prefixes would find as its count.
    df = vault.doc_frequency(["uses", "Parser", "CAFE", "café", "memory", "archive", "absent"])
    assert df == {"uses": 30, "parser": 30, "cafe": 1, "café": 1, "memory": 1,
                  "archive": 1, "absent": 0}
    tokens = index_tokens(vault._conn(), ["isn't", "uses", "--"])
    assert tokens == {"isn't": ("isn", "t"), "uses": ("us",), "--": ()}
    assert vault.doc_frequency(["isn't", "--"]) == {"isn't": 1, "--": 0}


def test_the_index_and_the_word_counts_share_one_tokenizer(engine: ContextEngine) -> None:
    sql = engine.rt.vault._conn().execute(
        "SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    assert f"tokenize='{TOKENIZE}'" in sql


def test_common_words_leave_the_fts_query_of_a_big_store(engine: ContextEngine) -> None:
    lines = [f"Entry {i}: the parser handles tokens quickly." for i in range(60)]
    lines.append("Entry special: the parser meets a walrus in the archive.")
    _log(engine, lines)
    rt = engine.rt
    a = analyze_query("parser walrus", rt.cfg.query)
    q = keyword_match(a, _bounded(keyword_max_df=0.5).search, rt.vault)
    assert (q.match, q.rescore) == ('"walrus"', "")
    small = keyword_match(a, Config().search, rt.vault)  # stores under 50k chunks are left alone
    assert (small.match, small.rescore) == ('"parser" OR "walrus"', "")
    only_common = keyword_match(analyze_query("parser tokens", rt.cfg.query),
                                _bounded(keyword_max_df=0.5).search, rt.vault)
    assert only_common.match in ('"parser"', '"tokens"') and not only_common.rescore
    hits = engine.search("parser walrus", k=1)
    assert "walrus" in hits[0].text


def test_past_the_row_budget_the_rarest_words_find_and_the_others_rescore(
        engine: ContextEngine) -> None:
    _harbour_log(engine)
    rt = engine.rt
    a = analyze_query("walrus ferry harbour", rt.cfg.query)
    cfg = _bounded(keyword_max_df=1.0, keyword_row_budget=5)
    q = keyword_match(a, cfg.search, rt.vault)
    assert (q.match, q.rescore) == ('"walrus"', '"ferry" OR "harbour"')
    bounded = keyword_lane(rt, a, 50, Filters(), cfg)
    full = dict(rt.vault.keyword('"walrus" OR "ferry" OR "harbour"', 50, Filters()))
    walrus = {cid for cid, _ in rt.vault.keyword('"walrus"', 50, Filters())}
    # Only the rows the rare word finds, each with its BM25 for the whole query.
    assert {cid for cid, _ in bounded} == walrus and len(walrus) == 3
    for cid, score in bounded:
        assert abs(score - full[cid]) < 1e-9
    assert [cid for cid, _ in bounded] == sorted(walrus, key=lambda c: -full[c])
    # The walrus rows that also name the ferry or the harbour rank above the lone one.
    rows = rt.vault.chunks([cid for cid, _ in bounded])
    assert "alone" in rows[bounded[-1][0]].text
    # A budget that holds every word's rows leaves one query, as in a small store.
    whole = keyword_match(a, _bounded(keyword_max_df=1.0, keyword_row_budget=1000).search,
                          rt.vault)
    assert whole.rescore == "" and whole.match.count(" OR ") == 2


def test_rescoring_words_keep_to_the_filters(engine: ContextEngine) -> None:
    _log(engine, ["The walrus watched the ferry.", "A walrus, alone."], uri="t:one")
    _log(engine, ["The walrus rode the ferry home.", "Ferry times."], uri="t:two")
    rt = engine.rt
    sid = {r[1]: r[0] for r in rt.vault._query("SELECT id, uri FROM sources", [])}["t:two"]
    found = rt.vault.keyword('"walrus"', 10, Filters(source_ids=(sid,)), '"ferry"')
    rows = rt.vault.chunks([cid for cid, _ in found])
    assert found and all(r.source_id == sid for r in rows.values())
    assert all("walrus" in r.text.lower() for r in rows.values())


def test_common_words_are_counted_in_one_pass_and_again_after_the_store_moves(
        engine: ContextEngine) -> None:
    from engine.store.vault import core as vault_mod

    _log(engine, [f"Entry {i}: the parser reads." for i in range(60)])
    vault = engine.rt.vault
    assert vault.doc_frequency(["parser", "entry"]) == {"parser": 60, "entry": 60}
    held = vault._common
    assert held is not None and held[0] == 60 and held[2]["parser"] == 60
    assert "walrus" not in held[2]  # under COMMON_TERMS_MIN chunks: looked up alone
    # Two more chunks: under a tenth, so the common counts are the ones read before,
    # while a rare word is counted as it is now.
    _log(engine, ["The parser meets a walrus.", "A walrus, alone."], uri="t:more")
    assert vault.doc_frequency(["parser", "walrus"]) == {"parser": 60, "walrus": 2}
    assert vault._common is not None and vault._common[2] is held[2]  # not read again
    # Past a tenth, the common terms are counted again.
    _log(engine, [f"Parser note {i}." for i in range(vault_mod.COMMON_TERMS_MIN // 5)],
         uri="t:grow")
    assert vault.doc_frequency(["parser"]) == {"parser": 61 + vault_mod.COMMON_TERMS_MIN // 5}
    assert vault._common is not None and vault._common[2] is not held[2]


def test_a_word_the_store_lacks_does_not_take_the_finding_place(engine: ContextEngine) -> None:
    _harbour_log(engine)
    rt = engine.rt
    cfg = _bounded(keyword_max_df=1.0, keyword_row_budget=5)
    a = analyze_query("zzqxy harbour", rt.cfg.query)  # a typo beside a word over the budget
    q = keyword_match(a, cfg.search, rt.vault)
    assert q.rescore == "" and '"harbour"' in q.match
    assert len(keyword_lane(rt, a, 50, Filters(), cfg)) == 11


def test_the_other_words_find_rows_when_the_rare_ones_find_none(engine: ContextEngine) -> None:
    _log(engine, ["The walrus watched the ferry.", "A walrus, alone."], uri="t:one")
    _log(engine, ["The ferry rode home.", "Ferry times.", "No boats today."], uri="t:two")
    rt = engine.rt
    sid = {r[1]: r[0] for r in rt.vault._query("SELECT id, uri FROM sources", [])}["t:two"]
    only_two = Filters(source_ids=(sid,))
    # "walrus" is in no chunk of t:two: "ferry" finds the rows there, scored as alone.
    found = rt.vault.keyword('"walrus"', 10, only_two, '"ferry"')
    alone = rt.vault.keyword('"ferry"', 10, only_two)
    assert found == alone and len(found) == 2
    # In the whole store the ferry rows of t:two are not found by "walrus".
    everywhere = {cid for cid, _ in rt.vault.keyword('"walrus"', 10, Filters(), '"ferry"')}
    assert everywhere.isdisjoint(cid for cid, _ in alone)


def test_rescored_rows_keep_their_whole_query_scores_under_filters_and_small_limits(
        engine: ContextEngine) -> None:
    lines = [f"Walrus note {i}: " + " ".join(["ferry"] * (i % 4) + ["harbour"] * (i % 3))
             for i in range(30)]
    lines += [f"Ferry and harbour only, note {i}." for i in range(30)]
    _log(engine, lines, uri="t:a")
    _log(engine, lines[:12], uri="t:b")
    rt = engine.rt
    sid = {r[1]: r[0] for r in rt.vault._query("SELECT id, uri FROM sources", [])}["t:b"]
    full_sql = '"walrus" OR "ferry" OR "harbour"'
    for filters in (Filters(), Filters(source_ids=(sid,))):
        walrus = {cid for cid, _ in rt.vault.keyword('"walrus"', 100, filters)}
        full = [(c, s) for c, s in rt.vault.keyword(full_sql, 200, filters) if c in walrus]
        for limit in (1, 3, 7, 40):
            got = rt.vault.keyword('"walrus"', limit, filters, '"ferry" OR "harbour"')
            assert [round(s, 9) for _, s in got] == [round(s, 9) for _, s in full[:limit]]
            assert {c for c, _ in got} <= walrus
            # the two queries one after the other, on one connection: the same rows
            assert rt.vault.keyword('"walrus"', limit, filters, '"ferry" OR "harbour"',
                                    parallel=False) == got


def test_common_counts_are_read_again_when_a_tenth_of_the_store_changed(
        engine: ContextEngine) -> None:
    _log(engine, [f"Ferry note {i}." for i in range(80)], uri="t:ferry")
    _log(engine, [f"Quiet note {i}." for i in range(80)], uri="t:quiet")
    vault = engine.rt.vault
    assert vault.doc_frequency(["ferry"]) == {"ferry": 80}
    # As many chunks again, but not the same ones: the count stays, the words change.
    engine.delete("t:ferry")
    _log(engine, [f"Harbour note {i}." for i in range(80)], uri="t:harbour")
    assert vault.chunk_count() == 160
    assert vault.doc_frequency(["ferry", "harbour"]) == {"ferry": 0, "harbour": 80}


def test_a_big_store_search_runs_the_bounded_lane_end_to_end(engine: ContextEngine) -> None:
    _harbour_log(engine)
    rt = engine.rt
    plain = rt.cfg
    rt.cfg = _bounded(keyword_max_df=0.5, keyword_row_budget=5)
    try:
        hits = engine.search("walrus harbour quiet", k=3)
    finally:
        rt.cfg = plain
    assert hits and all("walrus" in h.text.lower() for h in hits[:2])


def test_warm_up_counts_the_common_terms_of_a_big_store(engine: ContextEngine) -> None:
    _log(engine, [f"Ferry note {i}." for i in range(60)])
    engine.warm_up(background=False)
    assert engine.rt.vault._common is None  # under keyword_prune_min_chunks: nothing to do
    engine.rt.cfg = _bounded()
    engine.warm_up(background=False)
    held = engine.rt.vault._common
    assert held is not None and held[2]["ferri"] == 60  # FTS5's token for "ferry"


def test_the_keyword_lane_leaves_out_sources_not_ready(engine: ContextEngine) -> None:
    """While every source is ready the lane asks no more of the vault; once one is not
    (an ingest or a delete in progress), its chunks are left out again."""
    from engine.store.vault.rows import Filters

    eng = engine
    eng.wait(eng.ingest(text="The lighthouse keeper logs every storm.", title="one"))
    eng.wait(eng.ingest(text="A lighthouse stands on the northern cape.", title="two"))
    vault = eng.rt.vault
    assert len(vault.keyword('"lighthouse"', 10, Filters())) == 2
    sid = vault._query("SELECT id FROM sources ORDER BY id LIMIT 1")[0][0]
    with vault.write() as c:
        c.execute("UPDATE sources SET state = 'pending' WHERE id = ?", (sid,))
    assert len(vault.keyword('"lighthouse"', 10, Filters())) == 1
    with vault.write() as c:
        c.execute("UPDATE sources SET state = 'ready' WHERE id = ?", (sid,))
    assert len(vault.keyword('"lighthouse"', 10, Filters())) == 2


def test_the_lane_queries_at_once_only_when_it_runs_alone(
        engine: ContextEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside the vector lane (build_context, search) the second core embeds the query,
    so the keyword lane's two queries run one after the other there."""
    _harbour_log(engine)
    rt = engine.rt
    seen: list[bool] = []
    keyword = rt.vault.keyword

    def spy(*args: object, parallel: bool = True, **kw: object) -> object:
        seen.append(parallel)
        return keyword(*args, parallel=parallel, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(rt.vault, "keyword", spy)
    rt.cfg = _bounded(keyword_row_budget=3)
    a = analyze_query("walrus harbour ferry", rt.cfg.query)
    alone = keyword_lane(rt, a, 10, Filters(), rt.cfg)
    assert seen == [True] and alone
    engine.search("walrus harbour ferry", k=5)
    assert seen[1:] == [False]
    rt.cfg = _bounded(keyword_row_budget=3, parallel_lanes=False)
    engine.search("walrus harbour ferry", k=5)
    assert seen[2:] == [True]


def test_a_query_asked_during_the_first_common_pass_does_not_wait_for_it(
        engine: ContextEngine) -> None:
    """The warm-up counts a big store's common terms in a thread after open (0.8 s at
    500k chunks); a query asked meanwhile looks its own words up one by one instead of
    waiting for that pass, and reads the same counts a fresh pass gives."""
    import threading

    _log(engine, [f"Entry {i}: the parser reads." for i in range(60)])
    vault = engine.rt.vault
    got: dict[str, int] = {}
    with vault._common_lock:  # a first pass in flight in another thread
        asker = threading.Thread(
            target=lambda: got.update(vault.doc_frequency(["parser", "entry", "walrus"])),
            daemon=True)
        asker.start()
        asker.join(60)
        waited = asker.is_alive()
    asker.join()
    assert not waited, "the query waited for the common-term pass"
    assert got == {"parser": 60, "entry": 60, "walrus": 0}
    assert vault._common is None  # it did not count the vocabulary itself
    vault._df_cache = (vault._df_cache[0], {})
    assert vault.doc_frequency(["parser", "entry", "walrus"]) == got  # the pass agrees
    assert vault._common is not None


def _ids(engine: ContextEngine, uri: str) -> list[int]:
    return [r[0] for r in engine.rt.vault._query(
        "SELECT c.id FROM chunks c JOIN sources s ON s.id = c.source_id WHERE s.uri = ? "
        "ORDER BY c.id", [uri])]


def test_finding_words_past_the_scored_bound_score_their_newest_rows(
        engine: ContextEngine) -> None:
    """A word held by more chunks than ``keyword_scored_max`` (at a million chunks,
    "file": 158,865) is scored only in its newest rows, whole-query BM25 as before; in a
    store under ``keyword_prune_min_chunks`` nothing changes."""
    lines = [f"Note {i}: the crane " + "crane " * (i % 5) + "lifted cargo." for i in range(40)]
    _log(engine, lines)
    rt = engine.rt
    cfg = _bounded(keyword_max_df=1.0, keyword_row_budget=5, keyword_scored_max=12)
    one = keyword_match(analyze_query("crane", rt.cfg.query), cfg.search, rt.vault)
    assert (one.match, one.rescore, one.newest) == ('"crane"', "", 12)
    two = keyword_match(analyze_query("crane cargo", rt.cfg.query), cfg.search, rt.vault)
    assert two.newest == 12 and two.match == '"crane"' and two.rescore == '"cargo"'
    small = keyword_match(analyze_query("crane", rt.cfg.query), Config().search, rt.vault)
    assert small == keyword_match(analyze_query("crane", rt.cfg.query),
                                  _bounded(keyword_scored_max=40).search, rt.vault)
    assert small.newest == 0
    every = _ids(engine, "t:log")
    window = set(every[-12:])
    full = dict(rt.vault.keyword('"crane" OR "cargo"', 100, Filters()))
    got = keyword_lane(rt, analyze_query("crane cargo", rt.cfg.query), 5, Filters(), cfg)
    assert len(got) == 5 and {cid for cid, _ in got} <= window
    best = sorted(window, key=lambda c: (-full[c], c))[:5]
    assert [cid for cid, _ in got] == best
    for cid, score in got:
        assert abs(score - full[cid]) < 1e-9


def test_a_window_of_too_few_ready_rows_widens_and_filters_score_every_row(
        engine: ContextEngine) -> None:
    _log(engine, [f"Note {i}: the crane lifted cargo." for i in range(10)], uri="t:old")
    _log(engine, [f"Later {i}: a crane stood idle." for i in range(30)], uri="t:new")
    rt = engine.rt
    sid = {r[1]: r[0] for r in rt.vault._query("SELECT id, uri FROM sources", [])}
    newer = set(_ids(engine, "t:new"))
    # without filters the newest rows answer, in a window at least twice the lane's
    # depth (a bound under it would widen every time): t:new's newest eight
    newest = rt.vault.keyword('"crane"', 4, Filters(), newest=4)
    assert len(newest) == 4 and {c for c, _ in newest} <= set(_ids(engine, "t:new")[-8:])
    assert {c for c, _ in rt.vault.keyword('"crane"', 2, Filters(), newest=4)} <= set(
        _ids(engine, "t:new")[-4:])
    # a filter's rows need not be the newest: every row is scored, as without the bound
    old = Filters(source_ids=(sid["t:old"],))
    whole = rt.vault.keyword('"crane"', 6, old)
    assert len(whole) == 6 and rt.vault.keyword('"crane"', 6, old, newest=4) == whole
    # t:new not ready (an ingest in progress): the windows of 4 and 16 rows answer
    # nothing, and the lane widens to every row
    with rt.vault.write() as c:
        c.execute("UPDATE sources SET state = 'pending' WHERE id = ?", (sid["t:new"],))
    every = rt.vault.keyword('"crane"', 6, Filters())
    assert len(every) == 6 and not {c for c, _ in every} & newer
    assert rt.vault.keyword('"crane"', 6, Filters(), newest=4) == every


def test_a_query_asked_before_the_warm_up_thread_counts_does_not_count_for_it(
        engine: ContextEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm-up thread counts a big store's common terms after loading the model; a
    first query asked right after ``warm_up`` returned could take the pass's lock first
    and count the whole vocabulary in its own call (1.5 s at 1M chunks). It looks its
    own words up one by one instead, and the warm-up makes the pass."""
    import threading

    _log(engine, [f"Entry {i}: the parser reads." for i in range(60)])
    engine.rt.cfg = _bounded()
    vault = engine.rt.vault
    loading = threading.Event()
    monkeypatch.setattr(engine.rt.embedder, "load", lambda: loading.wait(60), raising=False)
    thread = engine.warm_up()  # in a thread, held in its model stage
    try:
        assert vault.doc_frequency(["parser", "entry", "walrus"]) == {
            "parser": 60, "entry": 60, "walrus": 0}
        assert vault._common is None  # the query did not count the vocabulary itself
    finally:
        loading.set()
    assert thread is not None
    thread.join(60)
    held = vault._common
    assert held is not None and held[2]["parser"] == 60  # the warm-up's pass
    assert not vault._common_coming


def test_a_one_word_query_does_not_count_the_vocabulary(engine: ContextEngine) -> None:
    """A process with no warm-up (``ctx --local search``) asking one word of a big store
    asks no count for it (its ``keyword_scored_max`` bound needs none); a query of
    several words makes the pass over the whole vocabulary, as before."""
    _log(engine, [f"Entry {i}: the parser reads." for i in range(60)])
    engine.rt.cfg = _bounded()
    vault = engine.rt.vault
    assert keyword_lane(engine.rt, analyze_query("parser"), 10, Filters(), engine.rt.cfg)
    assert vault._common is None
    assert vault.doc_frequency(["parser", "walrus"]) == {"parser": 60, "walrus": 0}
    assert vault._common is not None and vault._common[2]["parser"] == 60
