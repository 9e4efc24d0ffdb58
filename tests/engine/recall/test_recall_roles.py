"""Recall's preference for the chunk of the role a question asks for (issue 31.5):
the session's closing summary, a call's result, the call, a tool the question names
(``engine.retrieval.turn_roles``, ``engine.flows.recall.roles``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.recall.roles import apart, preferred
from engine.flows.search.ranking import Ranked
from engine.recall.config import RecallConfig
from engine.retrieval.config import TurnRoleConfig
from engine.retrieval.lexicon import commands_of, named_tools, tool_words
from engine.retrieval.turn_roles import (
    RoleChunk,
    ask_shortfalls,
    assistant_words,
    call_commands,
    context_and_ask,
    repeat_penalties,
    role_bonuses,
    said,
)
from engine.store.vault.core import ChunkRow
from tests.engine.recall.recall_helpers import ClaudeLines, synced, text, tool_use

ON = TurnRoleConfig(ending_bonus=0.1, output_bonus=0.1, call_bonus=0.1, named_bonus=0.1)


def _row(cid: int, kind: str, ordinal: int, tool: str | None = None,
         part: str | None = None, session: str = "s", body: str = "x") -> ChunkRow:
    meta = {"session": session, "turn": 0, "tool": tool, **({"part": part} if part else {})}
    return ChunkRow(cid, 1, ordinal, kind, "", body, 1, 0, None, meta, "s.jsonl", "s",
                    "transcript", None, None)


def test_the_question_shape_names_the_role_it_asks_for() -> None:
    cues = TurnRoleConfig()
    assert cues.asks("what came of the flaky test hunt?")["ending"]
    assert cues.asks("how did it turn out in the end")["ending"]
    assert cues.asks("what did the migration print?")["output"]
    assert cues.asks("which command did I run to rebuild the index?")["call"]
    plain = cues.asks("where do we cache the parsed config?")
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


def test_a_question_asking_how_it_was_done_or_which_command_asks_for_a_call() -> None:
    cues = TurnRoleConfig()
    for q in ("how did we check that the parser still builds on every platform?",
              "how did you look up who owns the signing key?",
              "how had the assistant started to rename the helpers?",
              "how did I try to reproduce the timeout locally?",
              "how were the stale cache files cleaned up and removed?",
              "how was the release branch finally pushed?",
              "how did the hotfix get published?",
              "which files did the assistant delete?",
              "which paths did we stage for the commit?",
              "what exact command listed the open ports?",
              "which flags does the installer accept?"):
        assert cues.asks(q)["call"], q


def test_a_question_about_a_reply_a_result_or_an_edits_content_asks_no_call() -> None:
    cues = TurnRoleConfig()
    for q in ("what did the assistant say about the command that hung?",
              "what did the linter report after the rename?",
              "when the context ran out, which places had changed?",
              "what did we add to the changelog?",
              "what did the editor flag in the config?",
              "why did the command fail on my laptop?",
              "how did the refactor turn out in the end?",
              "how long did the migration take?",
              "what does the options page look like now?"):
        assert not cues.asks(q)["call"], q


def test_a_question_asking_what_a_run_printed_or_reported_asks_for_its_output() -> None:
    cues = TurnRoleConfig()
    for q in ("what did the test run report after the rebase?",
              "which case failed in the integration suite?",
              "how long did the migration take?",
              "what did the lint show for the new module?",
              "what error did the build hit on the runner?",
              "what was the exit code of the deploy script?",
              "how many tests passed once the fixture was fixed?",
              "what was printed when the server started?",
              "did the tests pass after the rename?"):
        assert cues.asks(q)["output"], q


def test_a_question_about_what_someone_did_or_a_topic_word_asks_no_output() -> None:
    cues = TurnRoleConfig()
    for q in ("what did we add to the changelog?",
              "what did the assistant say about the cache?",
              "what did I say about caching?",
              "where is the output directory configured?",
              "how do we return early from the parser?",
              "which command did I run to rebuild the index?",
              "why did we pick sqlite over postgres?",
              "when was the logging module split out?"):
        assert not cues.asks(q)["output"], q


def test_by_default_an_output_question_ranks_results_and_quoted_output_up() -> None:
    chunks = [RoleChunk("turn_pair", "a", 1), RoleChunk("tool", "a", 2, tool="Bash"),
              RoleChunk("tool", "a", 3, tool="Bash", part="output"),
              RoleChunk("tool", "a", 4, tool="Bash", part="input"),
              RoleChunk("session_code", "a", 5)]
    cfg = dataclasses.replace(TurnRoleConfig(), named_bonus=0.0, shown_bonus=0.0)
    assert cfg.output_bonus > 0
    b = cfg.output_bonus
    assert role_bonuses("what did the test run report?", chunks, cfg) == [0.0, b, b, 0.0, b]
    assert role_bonuses("where is the output directory set?", chunks, cfg) == [0.0] * 5


def test_by_default_a_how_question_ranks_the_calls_up_and_not_the_replies() -> None:
    chunks = [RoleChunk("turn_pair", "a", 1), RoleChunk("tool", "a", 2, tool="Bash"),
              RoleChunk("tool", "a", 3, tool="Bash", part="output")]
    cfg = TurnRoleConfig()
    assert cfg.call_bonus > 0
    out = role_bonuses("how did we check that the parser still builds?", chunks, cfg)
    assert out[1] == cfg.call_bonus and out[0] == out[2] == 0.0
    assert role_bonuses("what did we add to the changelog?", chunks, cfg) == [0.0] * 3

def test_preferred_moves_the_asked_role_up_and_leaves_other_questions_alone() -> None:
    rows = {1: _row(1, "turn_pair", 1), 2: _row(2, "tool", 2, tool="Skill"),
            3: _row(3, "turn_pair", 3)}
    ranked: list[Ranked] = [(1, 0.50, {}), (3, 0.47, {}), (2, 0.45, {})]
    cfg = TurnRoleConfig(named_bonus=0.06)
    assert [c for c, _, _ in preferred("which skill did I launch?", ranked, rows, cfg)] == [
        2, 1, 3]
    assert [c for c, _, _ in preferred("why this design?", ranked, rows, cfg)] == [1, 3, 2]
    off = TurnRoleConfig(named_bonus=0.0, ending_bonus=0.0, cause_bonus=0.0, shown_bonus=0.0,
                         call_bonus=0.0, output_bonus=0.0)
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
    synced(engine, tmp_path, lines)


def test_recall_adds_the_named_tools_bonus_to_its_calls(engine: ContextEngine,
                                                       tmp_path: Path) -> None:
    _review_session(engine, tmp_path)
    query = "which skill did I launch for the review of the logs ignore branch?"

    def hits(roles: TurnRoleConfig) -> list[tuple[object, float]]:
        engine.rt.cfg = dataclasses.replace(
            engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, turn_roles=roles))
        hits = engine.recall(query, k=5).hits
        assert hits is not None
        return [(h.meta.get("tool"), h.score) for h in hits]

    off = hits(TurnRoleConfig(named_bonus=0.0, ending_bonus=0.0))
    assert off[0][0] is None, "the check can fail: without the role, the closing reply first"
    skill = dict(off)["Skill"]
    assert dict(hits(TurnRoleConfig()))["Skill"] == pytest.approx(skill + 0.05)  # default
    assert hits(TurnRoleConfig(named_bonus=0.2))[0] == ("Skill", pytest.approx(skill + 0.2))


REPLY = "User: where does the tap live?\nAssistant: Let me read the tap's formula files."


def _call(n: int) -> str:
    return (f"User: where does the tap live?\nAssistant: Let me read the tap's formula "
            f"files.\nTool Bash: cat Formula/f{n}.rb\nResult (exit 0): class F{n}")


def test_a_reply_and_the_calls_after_it_lead_with_the_same_words() -> None:
    words = said("turn_pair", REPLY)
    assert words == "Let me read the tap's formula files."
    assert said("tool", _call(1)) == said("tool", _call(2)) == words
    assert said("turn_pair", "Assistant: Let me read the tap's  formula\nfiles.") == words
    long = "User: q\nAssistant: " + "word " * 40
    assert said("turn_pair", long) == ("word " * 40)[:60]  # its start only
    for quotes_no_reply in ("Tool Bash (output): Assistant: not a reply",
                            "User: q\nAssistant (continued): the rest",
                            "User: q\nAssistant (thinking): hmm",
                            "User (request): Assistant: pasted", "Code: x"):
        assert said("tool", quotes_no_reply) is None, quotes_no_reply


def test_each_repeat_of_a_sessions_words_costs_the_penalty_once_more() -> None:
    keys = [("a", "w"), ("a", "w"), ("b", "w"), ("a", "w"), ("a", None), ("a", None)]
    assert repeat_penalties(keys, 0.1) == pytest.approx([0, 0.1, 0, 0.2, 0, 0])
    assert repeat_penalties(keys, 0.0) == [0.0] * 6


def test_apart_reads_the_next_different_chunk_before_a_second_copy() -> None:
    rows = {1: _row(1, "turn_pair", 1, body=REPLY), 2: _row(2, "tool", 2, "Bash", body=_call(1)),
            3: _row(3, "tool", 3, "Bash", body=_call(2)),
            4: _row(4, "tool", 4, "Bash", body=_call(3).replace("Let me", "Now let me")),
            5: _row(5, "tool", 5, "Bash", body=_call(4), session="other")}
    ranked: list[Ranked] = [(2, 0.50, {}), (3, 0.49, {}), (1, 0.48, {}), (5, 0.47, {}), (4, 0.40, {})]
    assert [c for c, _, _ in apart(ranked, rows, TurnRoleConfig(repeat_penalty=0.1))] == [
        2, 5, 4, 3, 1]
    off = TurnRoleConfig(repeat_penalty=0.0)
    assert apart(ranked, rows, off) == ranked
    assert TurnRoleConfig() == off  # off by default: set A's 0.1 failed set B (docs/tuning.md)
    with pytest.raises(ConfigError) as err:
        TurnRoleConfig(repeat_penalty=-0.1)
    assert "recall.turn_roles.repeat_penalty" in str(err.value)


def _tap_session(engine: ContextEngine, tmp_path: Path) -> None:
    """A request answered by one reply and five calls made after it (each quoting the
    reply's words), then a call of its own and a short closing reply."""
    claude = ClaudeLines()
    lines = [claude.user("where does the homebrew tap formula live?"),
             claude.assistant([text("Let me read the homebrew tap formula files.")],
                              msg_id="m0")]
    for i in range(5):
        lines += [claude.assistant([tool_use(f"b{i}", "Read",
                                             {"file_path": f"/src/tap/Formula/tool_{i}.rb"})],
                                   msg_id=f"m{i + 1}"),
                  claude.tool_result(f"b{i}", f"class Tool{i} < Formula\n  url 'x{i}'\nend")]
    lines += [claude.assistant([text("And the remote of the tap repository:"),
                                tool_use("g1", "Bash", {"command": "git remote -v"})],
                               msg_id="mg"),
              claude.tool_result("g1", "origin git@github.com:acme/homebrew-tap.git (fetch)"),
              claude.assistant([text("It lives in acme/homebrew-tap.")], msg_id="mz")]
    synced(engine, tmp_path, lines)


def test_recall_shows_a_different_chunk_before_a_second_copy_of_a_reply(
        engine: ContextEngine, tmp_path: Path) -> None:
    _tap_session(engine, tmp_path)
    query = "where does the homebrew tap formula live?"

    def hits(roles: TurnRoleConfig) -> list[str | None]:
        engine.rt.cfg = dataclasses.replace(
            engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, turn_roles=roles))
        hits = engine.recall(query, k=4).hits
        assert hits is not None
        return [said(h.kind, h.text) for h in hits]

    words = "Let me read the homebrew tap formula files."
    off = hits(TurnRoleConfig(repeat_penalty=0.0))
    assert off.count(words) >= 3, f"the check can fail: copies fill the top 4 without it {off}"
    on = hits(TurnRoleConfig(repeat_penalty=0.1))
    assert on.count(words) < off.count(words)
    assert len(set(on)) > len(set(off))


def test_a_why_question_asks_for_a_cause_and_a_diagnosis_says_one() -> None:
    cues = TurnRoleConfig()
    for asks in ("why did the lint step fail after the rename?",
                 "what was wrong with the quiet error check?",
                 "what made every command hang until I opted out?",
                 "how come the build broke on CI?"):
        assert cues.asks(asks)["cause"], asks
    assert not cues.asks("which command rebuilt the index?")["cause"]
    for says in ("There it is — the folder isn't tracked on this branch.",
                 "The issue is that biome formats the generated files.",
                 "The test failed because the pattern matches a prefix.",
                 "Yes, this is a bug: the settings are overwritten."):
        assert cues.says_cause(says), says
    # a bare "because" gives any reason (a decision's too), not a failure's cause
    assert not cues.says_cause("We kept SQLite because it ships with Python.")
    assert not cues.says_cause("Let me run the tests.")


def test_the_assistants_own_words_leave_out_the_request_and_the_output() -> None:
    call = ("User: why did it fail?\nAssistant: The issue is the path.\n"
            "Tool Bash: ls\nResult (exit 1): the problem is here")
    assert assistant_words("tool", call) == "Assistant: The issue is the path."
    reply = "User: the issue is the path, fix it\nAssistant: Done."
    assert assistant_words("turn_pair", reply) == "Assistant: Done."
    assert assistant_words("tool", "Tool Bash (output): the issue is x", "output") == ""
    assert assistant_words("tool", "User: q\nTool Bash: ls\nResult: the issue is x") == ""
    assert assistant_words("session_code", "Code: the issue is x") == ""


def test_a_cause_question_ranks_the_diagnosis_above_the_error() -> None:
    error = _row(1, "tool", 1, tool="Bash",
                 body="User: fix ci\nAssistant: Running it.\nTool Bash: go test\n"
                      "Result (exit 1): FAIL TestDiagram: no such directory docs/plans")
    diagnosis = _row(2, "turn_pair", 2,
                     body="User: fix ci\nAssistant: There it is: docs/plans isn't tracked.")
    other = _row(3, "turn_pair", 3, body="User: fix ci\nAssistant: I made the folder.")
    rows = {1: error, 2: diagnosis, 3: other}
    ranked: list[Ranked] = [(1, 0.50, {}), (3, 0.49, {}), (2, 0.48, {})]
    cfg = TurnRoleConfig(cause_bonus=0.05)
    asked = "why did the diagram test blow up on CI?"
    assert [c for c, _, _ in preferred(asked, ranked, rows, cfg)] == [2, 1, 3]
    assert [c for c, _, _ in preferred("what did we do for CI?", ranked, rows, cfg)] == [
        1, 3, 2]
    off = TurnRoleConfig(cause_bonus=0.0)
    assert preferred(asked, ranked, rows, off) == ranked
    near = TurnRoleConfig(cause_bonus=0.05, cause_reach=2)  # the diagnosis is 3rd: not read
    assert [c for c, _, _ in preferred(asked, ranked, rows, near)] == [1, 3, 2]
    chunks = [RoleChunk("turn_pair", "a", 1, diagnosis=True), RoleChunk("tool", "a", 2)]
    assert role_bonuses(asked, chunks, cfg) == [0.05, 0.0]
    # off by default: set A's 0.03 did not carry over to set B (docs/tuning.md)
    assert TurnRoleConfig().cause_bonus == 0.0


def _ci_session(engine: ContextEngine, tmp_path: Path) -> None:
    """A failing CI run, calls that look at it (each quoting the request's words), then
    the reply that says the cause, and a closing reply."""
    claude = ClaudeLines()
    lines = [claude.user("the diagram test is blowing up on CI, fix the diagram test")]
    for i in range(4):
        lines += [claude.assistant([text("Let me look at the diagram test on CI."),
                                    tool_use(f"b{i}", "Bash",
                                             {"command": f"go test ./diagram/... -run T{i}"})],
                                   msg_id=f"m{i}"),
                  claude.tool_result(f"b{i}", f"FAIL diagram test T{i}: open docs/plans: "
                                              "no such file or directory")]
    lines += [claude.assistant([text("There it is: docs/plans is not tracked on this "
                                     "branch, so it is absent on CI.")], msg_id="md"),
              claude.assistant([text("Created the output directory for the diagram test.")],
                               msg_id="mz")]
    synced(engine, tmp_path, lines)


def test_recall_answers_why_it_failed_with_the_diagnosis(engine: ContextEngine,
                                                        tmp_path: Path) -> None:
    _ci_session(engine, tmp_path)
    query = "why did the diagram test blow up on CI?"

    def first(roles: TurnRoleConfig) -> str:
        engine.rt.cfg = dataclasses.replace(
            engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, turn_roles=roles))
        hits = engine.recall(query, k=3).hits
        assert hits is not None
        return hits[0].text

    off = first(TurnRoleConfig(cause_bonus=0.0))
    assert "There it is" not in off, f"the check can fail: without the role {off!r}"
    assert "There it is" in first(TurnRoleConfig(cause_bonus=0.2))


def test_a_shell_calls_programs_are_read_from_its_command_line() -> None:
    assert commands_of("cd /repo/tap && git remote -v; description=Get the remote URL") == {
        "git", "git remote"}
    assert commands_of("git log main..HEAD --oneline | head -5") == {"git", "git log", "head"}
    assert commands_of("bash -lc 'ls packages'") == {"ls"}
    body = "User: fix it\nAssistant: Let me look.\nTool Bash: git log -3\nResult: 86f225d fix"
    assert call_commands("tool", body, "Bash", None) == {"git", "git log"}
    assert call_commands("tool", body, "Bash", "output") == frozenset()
    assert call_commands("tool", "Tool Read: /a/git.py\nResult: x", "Read", None) == frozenset()


def test_the_call_whose_command_shows_what_the_question_names_is_preferred() -> None:
    """"What were the commits" asks what git log shows; "where is the repository" what git
    remote shows; the call that ran it comes before its turn's other calls."""
    why = "User: look at the branch\nAssistant: Let me check.\n"
    rows = {
        1: _row(1, "tool", 1, "Bash", body=why + "Tool Bash: git status\nResult: clean"),
        2: _row(2, "tool", 2, "Bash", body=why + "Tool Bash: cd tap && git remote -v\n"
                                                "Result: origin git@host:org/tap.git"),
        3: _row(3, "tool", 3, "Bash", body=why + "Tool Bash: git log main..HEAD --oneline\n"
                                                "Result: 86f225d count tokens"),
    }
    ranked: list[Ranked] = [(1, 0.50, {}), (2, 0.49, {}), (3, 0.48, {})]
    cfg = TurnRoleConfig()
    assert preferred("what were the two commits on the branch?", ranked, rows, cfg)[0][0] == 3
    assert preferred("where is the repository of the tap?", ranked, rows, cfg)[0][0] == 2
    assert [r[0] for r in preferred("how is the tap set up?", ranked, rows, cfg)] == [1, 2, 3]
    off = dataclasses.replace(cfg, shown_bonus=0.0)
    assert preferred("what were the two commits on the branch?", ranked, rows, off)[0][0] == 1


def test_a_question_opening_with_its_context_is_split_from_its_ask() -> None:
    assert context_and_ask("When the analytics setup was timed stage by stage, how long did "
                           "closing the client take?") == (
        "When the analytics setup was timed stage by stage",
        "how long did closing the client take")
    assert context_and_ask("After the fix to the wrappers, how were both scripts checked to "
                           "still parse?") == ("After the fix to the wrappers",
                                               "how were both scripts checked to still parse")
    for no_context in ("how long did closing the client take?",
                       "which files did we delete, and why?",  # the clause after is no ask
                       ", what was it?", "why did lint fail"):
        assert context_and_ask(no_context) is None, no_context


def test_each_chunk_of_a_turn_is_lowered_by_how_much_less_it_leans_to_the_ask() -> None:
    groups = [("s", 1), ("s", 1), ("s", 2), None, ("s", 1), ("s", 2)]
    leans = [0.1, 0.3, -0.2, 0.9, None, -0.1]
    assert ask_shortfalls(groups, leans, 0.5) == pytest.approx([0.1, 0, 0.05, 0, 0, 0])
    assert ask_shortfalls(groups, leans, 0.0) == [0.0] * 6


def _deploy_session(engine: ContextEngine, tmp_path: Path) -> None:
    """One request answered by a reply that restates it and a call that holds what was
    asked about it (the port the health check answered on)."""
    claude = ClaudeLines()
    lines = [claude.user("the deploy script fails on staging with a timeout, can you look?"),
             claude.assistant([text("The deploy script fails on staging with a timeout: the "
                                    "staging deploy waits for the timeout of the deploy "
                                    "script on staging.")], msg_id="m0"),
             claude.assistant([tool_use("h1", "Bash", {"command": "curl -s localhost:8080/health",
                                                       "description": "health check"})],
                              msg_id="m1"),
             claude.tool_result("h1", "ok, listening on port 8080")]
    synced(engine, tmp_path, lines)


def test_within_a_turn_the_chunk_leaning_to_the_ask_comes_before_the_restated_context(
        engine: ContextEngine, tmp_path: Path) -> None:
    _deploy_session(engine, tmp_path)
    query = "When the deploy script failed on staging with a timeout, which port did it answer on?"
    quiet = TurnRoleConfig(ending_bonus=0.0, output_bonus=0.0, call_bonus=0.0,
                           named_bonus=0.0, shown_bonus=0.0)

    def first(roles: TurnRoleConfig) -> str:
        engine.rt.cfg = dataclasses.replace(
            engine.rt.cfg, recall=dataclasses.replace(engine.rt.cfg.recall, turn_roles=roles))
        hits = engine.recall(query, k=3).hits
        assert hits is not None and len(hits) >= 2
        return hits[0].kind

    assert first(quiet) == "turn_pair", "the check can fail: the reply restating it leads"
    assert first(dataclasses.replace(quiet, ask_weight=0.5)) == "tool"
    assert TurnRoleConfig().ask_weight == 0.0  # off: set A lost q068 (docs/tuning.md)
    with pytest.raises(ConfigError) as err:
        TurnRoleConfig(ask_weight=-0.1)
    assert "recall.turn_roles.ask_weight" in str(err.value)
