"""Retrieval over chat memory: speaker names in queries, answers next to the matched turn,
and one dated header per session in the packed context (fake embedder, real store)."""

from __future__ import annotations

from engine.config import Config
from engine.facade import ContextEngine
from engine.flows.search.lanes import run_lanes
from engine.flows.search.plan import analyse, row_speakers, speaker_names_in
from engine.retrieval.fts_match import fts_query
from engine.retrieval.query import analyze_query
from engine.store.vault.rows import ChunkRow, Filters

T0 = 1_700_000_000.0  # 2023-11-14 22:13 UTC


def _row(i: int, speaker: str, text: str) -> ChunkRow:
    return ChunkRow(i, 1, i, "turn", "", f"{speaker}: {text}", 10, 0, T0,
                    {"speaker": speaker, "turn_id": str(i)}, "chat:1", "session 1",
                    "conversation", T0, None)


def test_speaker_names_are_found_case_insensitively_and_taken_out() -> None:
    rows = [_row(1, "Ada", "hello"), _row(2, "Ben", "hi"), _row(3, "Ada", "bye")]
    assert speaker_names_in("What did ada bake?", row_speakers(rows)) == ["Ada"]
    assert speaker_names_in("What did Adams bake?", row_speakers(rows)) == []
    query = "What did Ada's brother and Ben bake for the fair?"
    named = speaker_names_in(query, row_speakers(rows))
    whole, content = analyse(query, named, _cfg().query)
    assert whole == analyze_query(query)
    text, analysis = content[frozenset({"Ada", "Ben"})]
    assert text == "What did brother and bake for the fair?"
    assert "ada" not in analysis.terms and "ben" not in analysis.terms
    assert content[frozenset({"Ada"})][0] == "What did brother and Ben bake for the fair?"


def test_a_query_that_is_only_a_name_keeps_the_name() -> None:
    rows = [_row(1, "Ada", "hello")]
    query = "Ada?"
    assert analyse(query, speaker_names_in(query, row_speakers(rows)), _cfg().query)[1] == {}
    assert speaker_names_in("What about Cy?", row_speakers(rows)) == []  # no speaker named


def _cfg() -> Config:
    return Config()


SESSION_1 = [
    ("Ada", "Morning! The fair is on Saturday and I signed up for the bake stall."),
    ("Ben", "Nice. What are you going to make for it?"),
    ("Ada", "Lemon bars with a thin crust, my grandmother's way."),
    ("Ben", "Sounds great, save me one."),
    ("Ada", "Deal. How was the climbing trip?"),
    ("Ben", "Cold, windy, and we turned back before the summit."),
]
SESSION_2 = [
    ("Ben", "Did the stall go well?"),
    ("Ada", "Sold out in an hour, people queued for the lemon bars."),
    ("Ben", "Told you so."),
]


def _ingest(engine: ContextEngine) -> None:
    for n, (turns, when) in enumerate(((SESSION_1, T0), (SESSION_2, T0 + 7 * 86400)), 1):
        rows = [{"speaker": s, "text": t, "id": f"{n}:{i}"} for i, (s, t) in enumerate(turns)]
        engine.wait(engine.ingest_conversation(rows, title=f"session {n}", uri=f"chat:{n}",
                                               session_time=when))


def test_reply_to_the_matched_turn_is_packed_under_one_session_header(
        engine: ContextEngine) -> None:
    _ingest(engine)
    # Each lane returns one turn: the others come in as neighbours of the hits.
    payload = engine.build_context("What is Ada going to make for the bake stall?",
                                   budget=400, now=T0 + 30 * 86400,
                                   config={"search": {"lane_depth": 1}})
    ctx = payload.context
    whys = {i.chunk_ids: i.why for i in payload.items}
    # The answer shares no word with the question; it comes in as the reply.
    assert "Ada: Lemon bars with a thin crust" in ctx
    assert sum("neighbour" in w for w in whys.values()) >= 2
    # One dated header per session, turns in their order, each turn on its own line.
    assert ctx.count("] session 1\n") == 1
    first = ctx.index("Ada: Morning!") if "Ada: Morning!" in ctx else -1
    reply = ctx.index("Ada: Lemon bars")
    question = ctx.index("Ben: Nice. What are you going to make")
    assert question < reply and (first == -1 or first < question)
    assert "2023-11-14 22:13 UTC" in ctx
    assert payload.total_tokens == engine.rt.counter.count(ctx) <= 400


def test_lanes_match_the_query_without_the_speaker_name(engine: ContextEngine) -> None:
    _ingest(engine)
    query = "When did Ada sell out her lemon bars?"
    res = run_lanes(engine.rt, query)
    content = analyze_query("When did sell out her lemon bars?")
    expected = [c for c, _ in engine.rt.vault.keyword(fts_query(content), 50, Filters())]
    assert res.lanes["keyword"] == expected
    assert "ada" in res.analysis.terms  # the rerank still knows who is asked about
    off = run_lanes(engine.rt, query, cfg=engine.rt.cfg.with_overrides(
        {"query": {"speaker_scoped": False}}))
    named = [c for c, _ in engine.rt.vault.keyword(fts_query(analyze_query(query)), 50,
                                                   Filters())]
    assert off.lanes["keyword"] == named != expected


def test_store_speakers_follow_ingestion_and_deletion(engine: ContextEngine) -> None:
    assert engine.rt.vault.speakers() == frozenset()
    _ingest(engine)
    assert engine.rt.vault.speakers() == {"Ada", "Ben"}
    engine.wait(engine.ingest_conversation([{"speaker": "Cy", "text": "Ada told me about it."}],
                                           title="session 3", uri="chat:3"))
    assert engine.rt.vault.speakers() == {"Ada", "Ben", "Cy"}  # read from the new rows
    engine.delete("chat:1")
    engine.delete("chat:2")
    assert engine.rt.vault.speakers() == {"Cy"}  # a deletion rereads every row


def test_vector_lane_embeds_the_query_without_the_hits_speakers(engine: ContextEngine) -> None:
    _ingest(engine)
    engine.wait(engine.ingest_conversation([{"speaker": "Cy", "text": "Ada told me about it."}],
                                           title="session 3", uri="chat:3"))
    rt = engine.rt
    res = run_lanes(rt, "When did Ada sell out her lemon bars?")
    assert res.query_vector is not None
    assert (res.query_vector == rt.embedder.encode(["When did sell out her lemon bars?"])[0]).all()
    # The query names two speakers of the store, but within Cy's conversation only Cy is
    # a speaker of the hits: only Cy's name leaves the query.
    cy = {s.id for s in engine.sources() if s.uri == "chat:3"}
    res = run_lanes(rt, "What did Cy say about Ada?", filters=Filters(source_ids=tuple(sorted(cy))))
    assert res.query_vector is not None
    assert (res.query_vector == rt.embedder.encode(["What did say about Ada?"])[0]).all()


def test_access_and_audit_writes_keep_chunk_caches(engine: ContextEngine) -> None:
    _ingest(engine)
    vault = engine.rt.vault
    gen = vault.generation
    engine.build_context("What did Ada bake?", budget=300)  # records access stats
    vault.add_audit("build_context", None, [], {"items": 1})
    vault.set_meta("probe", "1")
    assert vault.generation == gen
    engine.wait(engine.ingest_conversation([{"speaker": "Cy", "text": "Hello."}],
                                           title="session 3", uri="chat:3"))
    assert vault.generation > gen and "Cy" in vault.speakers()


def test_turns_by_the_speaker_the_question_names_keep_their_score(
        engine: ContextEngine) -> None:
    _ingest(engine)
    query = "What is Ada going to make for the bake stall?"
    flat = {"speaker_other": 1.0, "speaker_other_neighbour": 1.0, "question_turn": 1.0}
    runs = {}
    for name, packing in (("on", {}), ("off", flat)):
        payload = engine.build_context(query, budget=2000, now=T0 + 30 * 86400,
                                       config={"search": {"lane_depth": 1},
                                               "packing": packing})
        runs[name] = {i.chunk_ids: i.score for i in payload.items}
    rows = engine.rt.vault.chunks([c for ids in runs["off"] for c in ids])
    assert set(runs["on"]) == set(runs["off"])
    ben = [ids for ids in runs["off"] if rows[ids[0]].meta["speaker"] == "Ben"]
    ada = [ids for ids in runs["off"] if rows[ids[0]].meta["speaker"] == "Ada"
           and "?" not in rows[ids[0]].text]
    assert ben and ada
    # Ben is not asked about: his turns weigh at most 0.85 of their score without the
    # prior; Ada's statements lose nothing of their own, only what the hit they
    # neighbour lost, so none of them loses more than any of Ben's turns.
    ratio = {ids: runs["on"][ids] / runs["off"][ids] for ids in runs["off"]}
    assert all(ratio[ids] <= 0.85 + 1e-9 for ids in ben)
    assert min(ratio[ids] for ids in ada) >= max(ratio[ids] for ids in ben) - 1e-9
    assert min(ratio[ids] for ids in ada) > min(ratio[ids] for ids in ben)
