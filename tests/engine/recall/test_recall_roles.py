"""Recall's preference for the chunk of the role a question asks for (issue 31.5):
the session's closing summary, a call's result, the call, a tool the question names
(``engine.retrieval.turn_roles``, ``engine.flows.recall_roles``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall_roles import preferred
from engine.recall.config import RecallConfig
from engine.retrieval.turn_roles import (
    RoleChunk,
    TurnRoleConfig,
    named_tools,
    role_bonuses,
    tool_words,
)
from engine.store.vault import ChunkRow
from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines

ON = TurnRoleConfig(ending_bonus=0.1, output_bonus=0.1, call_bonus=0.1, named_bonus=0.1)


def _row(cid: int, kind: str, ordinal: int, tool: str | None = None,
         part: str | None = None, session: str = "s") -> ChunkRow:
    meta = {"session": session, "turn": 0, "tool": tool, **({"part": part} if part else {})}
    return ChunkRow(cid, 1, ordinal, kind, "", "x", 1, 0, None, meta, "s.jsonl", "s",
                    "transcript", None, None)


def test_the_question_shape_names_the_role_it_asks_for() -> None:
    cues = TurnRoleConfig()
    assert cues.asks("what came of the flaky test hunt?")["ending"]
    assert cues.asks("how did it turn out in the end")["ending"]
    assert cues.asks("what did the migration print?")["output"]
    assert cues.asks("which command did I run to rebuild the index?")["call"]
    plain = cues.asks("why do we cache the parsed config?")
    assert not any(plain.values())


def test_a_tool_is_named_by_its_name_words_or_its_usual_verbs() -> None:
    assert {"web", "search"} <= tool_words("WebSearch")
    assert "skill" in tool_words("Skill")
    assert "query" in tool_words("mcp__plugin_context7__query-docs")
    tools = {"Bash", "Edit", "Skill", "WebSearch", "Read"}
    assert named_tools("which skill did I launch for the review?", tools) == {"Skill"}
    assert named_tools("which file did we edit to silence it?", tools) == {"Edit"}
    assert "WebSearch" in named_tools("what did I search online for the typings?", tools)
    assert named_tools("why is the cache stale?", tools) == set()


def test_the_closing_summary_is_the_sessions_last_whole_reply() -> None:
    chunks = [RoleChunk("turn_pair", "a", 3), RoleChunk("turn_pair", "a", 9),
              RoleChunk("turn_pair", "a", 12, part="request"), RoleChunk("tool", "a", 10),
              RoleChunk("turn_pair", "b", 2)]
    out = role_bonuses("what came of the refactor?", chunks, ON)
    assert out == [0.0, 0.1, 0.0, 0.0, 0.1]
    assert role_bonuses("why the refactor?", chunks, ON) == [0.0] * 5


def test_output_questions_prefer_results_and_call_questions_the_calls() -> None:
    chunks = [RoleChunk("tool", "a", 1, tool="Bash"),
              RoleChunk("tool", "a", 2, tool="Bash", part="output"),
              RoleChunk("tool", "a", 3, tool="Edit", part="input"),
              RoleChunk("turn_pair", "a", 4)]
    shape = dataclasses.replace(ON, named_bonus=0.0)
    assert role_bonuses("what did the build print?", chunks, shape) == [0.1, 0.1, 0.0, 0.0]
    assert role_bonuses("which command built it?", chunks, shape) == [0.1, 0.0, 0.1, 0.0]
    # a named tool's chunks get its bonus too ("command" names Bash; the call asked for)
    assert role_bonuses("which command built it?", chunks, ON) == [0.2, 0.0, 0.1, 0.0]


def test_preferred_moves_the_asked_role_up_and_leaves_other_questions_alone() -> None:
    rows = {1: _row(1, "turn_pair", 1), 2: _row(2, "tool", 2, tool="Skill"),
            3: _row(3, "turn_pair", 3)}
    ranked = [(1, 0.50, {}), (3, 0.47, {}), (2, 0.45, {})]
    cfg = TurnRoleConfig(named_bonus=0.06)
    assert [c for c, _, _ in preferred("which skill did I launch?", ranked, rows, cfg)] == [
        2, 1, 3]
    assert [c for c, _, _ in preferred("why this design?", ranked, rows, cfg)] == [1, 3, 2]
    off = TurnRoleConfig(named_bonus=0.0, ending_bonus=0.0)
    assert not off.on
    assert preferred("which skill did I launch?", ranked, rows, off) == ranked


def test_role_bonuses_are_bounded_and_named_in_errors() -> None:
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(RecallConfig(), turn_roles=TurnRoleConfig(named_bonus=3.0))
    assert "recall.turn_roles.named_bonus" in str(err.value)


def _review_session(engine: ContextEngine, tmp_path: Path) -> None:
    """A request answered by shell calls that share the question's words, then a short
    one answered by a Skill call that shares only its tool's name with it."""
    claude = ClaudeLines()
    lines = [claude.user("run the review of the logs ignore branch")]
    for i in range(6):
        lines += [claude.assistant([tool_use(f"b{i}", "Bash",
                                             {"command": f"git diff main -- logs/ignore_{i}.go"})],
                                   msg_id=f"m{i}"),
                  claude.tool_result(f"b{i}", f"review of the logs ignore branch: file {i} ok")]
    lines += [claude.user("go on"),
              claude.assistant([tool_use("s1", "Skill", {"skill": "workflows:audit"})],
                               msg_id="ms"),
              claude.tool_result("s1", "Started the audit workflow"),
              claude.assistant([text("The review of the logs ignore branch is done.")],
                               msg_id="mz")]
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_lines(folder / "s.jsonl", lines)
    engine.sync([str(folder)])


def test_recall_adds_the_named_tools_bonus_to_its_calls(engine: ContextEngine,
                                                       tmp_path: Path) -> None:
    _review_session(engine, tmp_path)
    query = "which skill did I launch for the review of the logs ignore branch?"

    def hits(roles: TurnRoleConfig) -> list[tuple[object, float]]:
        engine.rt.cfg = dataclasses.replace(
            engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, turn_roles=roles))
        return [(h.meta.get("tool"), h.score) for h in engine.recall(query, k=5).hits]

    off = hits(TurnRoleConfig(named_bonus=0.0, ending_bonus=0.0))
    assert off[0][0] is None, "the check can fail: without the role, the closing reply first"
    skill = dict(off)["Skill"]
    assert dict(hits(TurnRoleConfig()))["Skill"] == pytest.approx(skill + 0.05)  # default
    assert hits(TurnRoleConfig(named_bonus=0.2))[0] == ("Skill", pytest.approx(skill + 0.2))
