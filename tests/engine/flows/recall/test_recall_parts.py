"""The parts of a call or request (a call's whole output, stored beside its own chunk)
in recall's ranking: found by their words, not by the vector lane, and ranked after
chunks that score about as well (recall.part_vector, recall.part_penalty); and a call's
hit shown with its answering part, which then takes no slot of its own
(recall.part_lines)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.parts import call_of, demoted, is_part, line_weigher, shown_with_parts
from engine.flows.search.ranking import Ranked, rank_query
from engine.recall.config import RecallConfig
from engine.recall.present import part_lines, written
from engine.retrieval.lexicon import STOPWORDS
from engine.retrieval.query import analyze_query
from engine.store.vault.core import ChunkRow
from engine.tokens import TokenCounter
from tests.engine.recall.recall_helpers import ClaudeLines, call_lines, synced, text

RARE = "zephyrquartz"  # a word only the middle of the long output holds


def _row(cid: int, part: str | None, key: str | None = None, text: str = "x",
         kind: str = "tool") -> ChunkRow:
    meta = {"session": "s", "turn": 0, **({"part": part} if part else {}),
            **({"key": key} if key else {})}
    return ChunkRow(cid, 1, cid, kind, "", text, 1, 0, None, meta, "s.jsonl", "s",
                    "transcript", None, None)


CALL = "claude:s:tool:t1"


def _session(engine: ContextEngine, tmp_path: Path,
             line: str = f"WARN the {RARE} exporter dropped a column in test_case_150",
             reply: str = "The exporter tests pass.") -> None:
    """One session: a test run whose 300-line output holds ``line`` in its middle (only
    the call's whole output, a part, holds it), then ``reply``."""
    claude = ClaudeLines()
    lines = [f"PASS tests/test_export.py::test_case_{i} exporter handles rows" for i in range(300)]
    lines[150] = line
    synced(engine, tmp_path, [
        claude.user("run the exporter tests"),
        *call_lines(claude, "t1", "Bash", {"command": "pytest -v tests/test_export.py"},
                    "\n".join(lines), "m1"),
        claude.assistant([text(reply)], msg_id="m2"),
    ])


def test_a_part_ranks_below_a_chunk_that_scores_about_as_well() -> None:
    rows = {1: _row(1, "output"), 2: _row(2, None), 3: _row(3, "request")}
    ranked: list[Ranked] = [(1, 0.50, {}), (2, 0.48, {}), (3, 0.30, {})]
    assert [c for c, _, _ in demoted(ranked, rows, 0.05)] == [2, 1, 3]
    assert [c for c, _, _ in demoted(ranked, rows, 0.0)] == [1, 2, 3]
    assert is_part(rows[1]) and not is_part(rows[2])


def test_parts_are_found_by_their_words_not_by_the_vector_lane(engine: ContextEngine,
                                                               tmp_path: Path) -> None:
    _session(engine, tmp_path)
    rt = engine.rt
    res, _, _ = rank_query(rt, f"{RARE} exporter", 10, expand_session=True,
                           vector_keeps=lambda row: not is_part(row))
    assert res.lanes["vector"], "the vector lane still finds the call's own chunks"
    assert not any(is_part(res.rows[c]) for c in res.lanes["vector"])
    keyword_parts = [c for c in res.lanes["keyword"] if is_part(res.rows[c])]
    assert keyword_parts, "the part holding the rare word is found by its words"
    # and recall (the default: parts out of the vector lane) shows that part's line
    hits = engine.recall(f"{RARE} exporter", k=5).hits
    assert hits is not None
    assert any(RARE in h.excerpt for h in hits)


def test_without_the_setting_parts_are_in_the_vector_lane(engine: ContextEngine,
                                                          tmp_path: Path) -> None:
    """The check above can fail: unfiltered, the vector lane does return parts."""
    _session(engine, tmp_path)
    res, _, _ = rank_query(engine.rt, f"{RARE} exporter", 10, expand_session=True)
    assert any(is_part(res.rows[c]) for c in res.lanes["vector"])


def test_part_penalty_is_bounded() -> None:
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(RecallConfig(), part_penalty=2.0)
    assert "recall.part_penalty" in str(err.value)


# --- a call's hit shows its answering part (recall.part_lines) -------------------------

def _call_rows() -> dict[int, ChunkRow]:
    return {
        1: _row(1, None, CALL, "User: run the exporter tests\nTool Bash: pytest tests\n"
                              "Result (exit 1): 300 tests, 1 failed"),
        2: _row(2, None, "claude:s:turn_pair:m2#0", "Assistant: one test fails",
                kind="turn_pair"),
        3: _row(3, "output", f"{CALL}:output#0", "Tool Bash (output): PASS test_case_1"),
        4: _row(4, "output", f"{CALL}:output#1",
                "Tool Bash (output, continued): FAIL test_case_150 column dropped"),
        5: _row(5, "output", "claude:s:tool:t9:output#0", "Tool Bash (output): column"),
        6: _row(6, None, "claude:s:tool:t9", "Tool Bash: ls"),
    }


def test_a_part_names_its_call_and_no_other_chunk_does() -> None:
    rows = _call_rows()
    assert call_of(rows[3]) == CALL and call_of(rows[4]) == CALL
    assert call_of(rows[1]) is None and call_of(rows[2]) is None
    request = _row(7, "request", "claude:s:turn_pair:u1#request0")
    assert call_of(request) is None  # a long request's part belongs to no call


def test_a_shown_calls_parts_take_no_slot_and_its_answering_part_joins_it() -> None:
    rows = _call_rows()
    ranked: list[Ranked] = [(1, 0.9, {}), (3, 0.8, {}), (4, 0.7, {}), (2, 0.6, {}),
                            (5, 0.5, {}), (6, 0.4, {})]
    terms = ("column", "dropp", "fail")
    shown, answering = shown_with_parts(ranked, rows, 3, terms, STOPWORDS)
    # the call's two parts take no slot: the reply and the other call's part come up
    assert [c for c, _, _ in shown] == [1, 2, 5]
    # of its parts, the one holding the query's words the call lacks ("column")
    assert answering == {1: 4}
    # a part above its call keeps its slot, and is not shown twice
    ranked = [(4, 0.9, {}), (1, 0.8, {}), (3, 0.7, {}), (2, 0.6, {})]
    shown, answering = shown_with_parts(ranked, rows, 3, terms, STOPWORDS)
    assert [c for c, _, _ in shown] == [4, 1, 2]
    assert answering == {1: 3} or 1 not in answering
    assert answering.get(1) != 4


def test_a_part_holding_none_of_the_querys_words_is_not_shown() -> None:
    rows = _call_rows()
    ranked: list[Ranked] = [(1, 0.9, {}), (3, 0.8, {}), (2, 0.6, {})]
    shown, answering = shown_with_parts(ranked, rows, 2, ("zephyr",), STOPWORDS)
    assert [c for c, _, _ in shown] == [1, 2] and answering == {}


def test_an_inputs_lines_are_what_it_wrote() -> None:
    edit = "/src/Containerfile\nold_string:\nRUN npm ci\nnew_string:\nRUN npm install -g npm\nRUN npm ci"
    assert written(edit) == "/src/Containerfile\nnew_string:\nRUN npm install -g npm\nRUN npm ci"
    patch = "apply_patch <<'PATCH'\n--- a/x\n+++ b/x\n-old line\n+new line\n context"
    assert written(patch) == "apply_patch <<'PATCH'\n--- a/x\n+++ b/x\n+new line\n context"
    assert written("command=ls -la") == "command=ls -la"
    counter = TokenCounter.shared()
    old = "\n".join(f"OLD {i} keep the build steps" for i in range(60))
    text = f"Tool Edit (input): /src/Containerfile\nold_string:\n{old}\nnew_string:\nRUN npm ci"
    got = part_lines(text, "what did the recipe now run", counter, 40)
    assert got.startswith("Tool Edit (input): ") and "RUN npm ci" in got and "OLD" not in got
    assert counter.count(got) <= 40


@pytest.mark.parametrize("by", ["words", "weight"])
def test_a_parts_lines_from_its_middle_are_marked_so(by: str) -> None:
    """The lines shown start after a blank line in the middle of the output: the part's
    head is followed by "… " (before, a blank first line read as the part's own first
    line, and the lines were shown as if the output began with them)."""
    counter = TokenCounter.shared()
    output = "\n".join(["collecting " + "x " * 20] + [f"filler {i} " + "y " * 20 for i in range(30)]
                       + ["", f"WARN {RARE} dropped a column", ""] + [f"tail {i}" for i in range(5)])

    def lines(query: str) -> str:
        weigher = (line_weigher(dict.fromkeys(analyze_query(query).terms, 1.0), STOPWORDS)
                   if by == "weight" else None)
        return part_lines(f"Tool Bash (output): {output}", query, counter, 30,
                          "Tool Bash: run", weigher)

    got = lines(f"which {RARE} warning")
    assert got.startswith("Tool Bash (output): … ") and RARE in got
    assert counter.count(got) <= 30
    # the first line answers: no "… "
    assert lines("what was collecting").startswith("Tool Bash (output): collecting x")


def _failing_session(engine: ContextEngine, tmp_path: Path) -> None:
    _session(engine, tmp_path, f"FAIL test_case_150: {RARE} column dropped, found = true, "
             "want false", "One exporter test fails.")


@pytest.mark.parametrize("budget", [None, 2000])
def test_a_call_hit_shows_its_answering_parts_lines(engine: ContextEngine, tmp_path: Path,
                                                    budget: int | None) -> None:
    """The call's own chunk shows the head and tail of the output; the failing line is in
    its middle, in a part: the call's hit carries it, names the part, and the part takes
    no slot of its own (before recall.part_lines, the call's excerpt lacked the line)."""
    _failing_session(engine, tmp_path)
    query = f"which exporter case failed with {RARE} and what did it report"
    res = engine.recall(query, k=8, budget=budget)
    hits = res.hits or ()
    calls = [h for h in hits if h.kind == "tool" and not h.meta.get("part")]
    assert calls, [h.text[:80] for h in hits]
    call = calls[0]
    rows = engine.rt.vault.chunks(list(call.chunks))
    assert len(call.chunks) == 2 and call_of(rows[call.chunks[1]]) == call.meta["key"]
    assert "found = true, want false" in call.text
    assert "found = true, want false" in call.excerpt
    assert not any(h.meta.get("part") == "output" for h in hits)  # no slot of its own
    if budget is None:
        assert engine.rt.counter.count(call.excerpt) <= engine.rt.cfg.recall.hit_excerpt_tokens
    # switched off: the call's hit is its chunk alone, and the part shows on its own
    engine.rt.cfg = dataclasses.replace(
        engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, part_lines=False))
    hits = engine.recall(query, k=8, budget=budget).hits or ()
    call = next(h for h in hits if h.kind == "tool" and not h.meta.get("part"))
    assert call.chunks == (call.chunk_id,) and "found = true" not in call.excerpt


def test_part_share_is_bounded() -> None:
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(RecallConfig(), part_share=1.5)
    assert "recall.part_share" in str(err.value)
