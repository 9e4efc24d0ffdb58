"""Turn hits (issue 26): a recall hit is a turn, its request once and then its best
chunks within recall.turn_hit_tokens; the chunk kinds stay facets."""

from __future__ import annotations

import dataclasses

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.parts import call_of
from engine.flows.recall.turns import group_turns
from engine.flows.search.ranking import Ranked
from engine.recall.config import RecallConfig
from engine.recall.present import compose_turn
from engine.store.vault.core import ChunkRow
from engine.tokens import TokenCounter
from tests.conftest import shared_data


def _row(cid: int, session: str | None, turn: int | None, text: str = "x") -> ChunkRow:
    meta = {k: v for k, v in (("session", session), ("turn", turn)) if v is not None}
    return ChunkRow(cid, 1, cid, "turn_pair", "", text, 1, 0, None, meta, "s.jsonl", "s",
                    "transcript", None, None)


def test_group_turns_keeps_the_order_of_each_turns_best_chunk() -> None:
    rows = {1: _row(1, "a", 0), 2: _row(2, "a", 1), 3: _row(3, "a", 0), 4: _row(4, None, None),
            5: _row(5, "b", 0), 6: _row(6, "a", 1)}
    ranked: list[Ranked] = [(cid, 10.0 - i, {}) for i, cid in enumerate([2, 1, 3, 4, 6, 5])]
    got = group_turns(ranked, rows, 3)
    assert [[c for c, _ in t] for t in got] == [[2, 6], [1, 3], [4]]
    assert got[0] == [(2, 10.0), (6, 6.0)]
    assert len(group_turns(ranked, rows, 10)) == 4  # "b" turn 0 comes last


def test_compose_turn_quotes_the_request_once_within_the_budget() -> None:
    counter = TokenCounter.shared()
    texts = [("User: why does resume see local changes?\nAssistant: go-git ignores the "
              "global gitignore."),
             "User: why does resume see local changes?\nTool Bash: git status\nResult: clean",
             "Let me think about " + "resume " * 300]
    out, drawn = compose_turn(texts, "resume local changes", counter, 120)
    assert out.count("User: why does resume") == 1
    assert out.startswith("User: why does resume see local changes?\nAssistant: go-git")
    assert "Tool Bash: git status" in out
    assert counter.count(out) <= 120
    assert drawn == 3  # the third is cut to the room left
    small, n = compose_turn(texts, "resume", counter, 64)
    assert counter.count(small) <= 64 and n >= 1


@pytest.mark.parametrize("budget", [64, 200])
def test_compose_turn_never_exceeds_its_budget(budget: int) -> None:
    counter = TokenCounter.shared()
    texts = ["User: " + "ask " * 100 + "\n" + "word " * 300, "word " * 500]
    out, _ = compose_turn(texts, "word", counter, budget)
    assert counter.count(out) <= budget


@pytest.mark.parametrize(("field", "value"), [("hit_unit", "session"),
                                              ("turn_hit_tokens", 10)])
def test_recall_config_checks_the_turn_settings(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        RecallConfig(**{field: value})  # type: ignore[arg-type]  # a value the check refuses
    assert f"recall.{field}" in str(err.value)


def _with_unit(engine: ContextEngine, unit: str) -> None:
    cfg = engine.rt.cfg
    engine.rt.cfg = dataclasses.replace(cfg, recall=dataclasses.replace(cfg.recall,
                                                                        hit_unit=unit))


def test_turn_hits_draw_on_one_turn_each(engine: ContextEngine) -> None:
    engine.sync([str(shared_data("transcripts"))])
    _with_unit(engine, "turn")
    hits = engine.recall("why did the commit fail", k=8).hits or ()
    assert hits
    rows = engine.rt.vault.chunks([c for h in hits for c in h.chunks])
    turns = []
    for h in hits:
        assert h.chunks[0] == h.chunk_id
        drawn = [rows[c] for c in h.chunks]
        assert {(r.meta.get("session"), r.meta.get("turn")) for r in drawn} == {
            (h.meta.get("session"), h.meta.get("turn"))}
        if h.meta.get("turn") is not None:  # a chunk of no known turn is a turn of its own
            turns.append((h.meta.get("session"), h.meta.get("turn")))
        assert engine.rt.counter.count(h.text) <= engine.rt.cfg.recall.turn_hit_tokens
        assert engine.rt.counter.count(h.excerpt) <= engine.rt.cfg.recall.hit_excerpt_tokens
    assert turns and len(set(turns)) == len(turns)  # one hit a turn
    tools = engine.recall("why did the commit fail", k=8, types=["tool"]).hits or ()
    kinds = engine.rt.vault.chunks([c for h in tools for c in h.chunks])
    assert tools and {r.kind for r in kinds.values()} == {"tool"}
    _with_unit(engine, "chunk")
    chunks = engine.recall("why did the commit fail", k=8).hits or ()
    own = engine.rt.vault.chunks([c for h in chunks for c in h.chunks])
    for h in chunks:  # its own chunk, and a call's answering part (recall.part_lines)
        assert h.chunks[0] == h.chunk_id and h.text.startswith(own[h.chunk_id].text)
        assert all(call_of(own[c]) == h.meta.get("key") for c in h.chunks[1:])
        assert len(h.chunks) <= 2 and (len(h.chunks) == 2) == (h.text != own[h.chunk_id].text)
