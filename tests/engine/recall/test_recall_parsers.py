"""Claude Code and Codex transcript parsers, on real files and on edge cases."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engine.errors import FileRejected
from engine.recall.claude import parse_claude
from engine.recall.codex import parse_codex
from engine.recall.model import detect_agent, parse_timestamp, project_from_cwd
from tests.engine.recall.recall_helpers import (
    TRANSCRIPTS,
    ClaudeLines,
    parse_any,
    text,
    tool_use,
    transcript,
    write_lines,
)
from tests.engine.recall.test_recall_chunks import PINNED

TINY = "claude/obra__episodic-memory__tiny-conversation.jsonl"
SHORT = "claude/marot__spotter__short.jsonl"
CODEX_040 = ("codex/jnarowski__agentcmd__rollout-2025-09-24T19-22-20-"
             "01997e76-d124-7592-9cac-2ec05abbca08.jsonl")
CODEX_0125 = ("codex/codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-"
              "019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
CODEX_REDACTED = ("codex/madshn__localpush__rollout-2026-02-23T12-54-34-"
                  "019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_shared_transcript_parses_cleanly(name: str) -> None:
    path = transcript(name)
    agent = name.split("/")[0]
    assert detect_agent(path) == agent
    result = parse_any(path)
    assert result.bad_lines == 0
    assert result.end_offset == path.stat().st_size
    assert result.info.agent == agent
    assert result.info.session_id
    json.dumps(result.state)  # resumable state is plain JSON
    for event in result.events:
        assert event.role in ("user", "assistant", "tool", "system")
        assert event.type in ("text", "thinking", "tool_call", "tool_result", "summary")


def test_no_shared_transcript_is_left_unpinned() -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.skip("shared transcript data not present")
    present = {f"{p.parent.name}/{p.name}" for p in TRANSCRIPTS.glob("*/*.jsonl")}
    assert present == set(PINNED)


def test_session_info_of_a_claude_session() -> None:
    result = parse_claude(transcript(TINY))
    info = result.info
    assert info.session_id == "67a8478e-78dc-44ab-82ea-f65c8ead85f6"
    assert info.project == "example-project"  # a .worktrees/<name> folder belongs to its repo
    assert info.branch == "feature-branch"
    assert info.model == "claude-opus-4-1-20250805"
    assert info.started_at == parse_timestamp("2025-09-19T17:34:29.181Z")
    assert (info.is_subagent, info.parent_session, info.title) == (False, None, None)


@pytest.mark.parametrize(("name", "parent", "agent_id"), [
    ("claude/codemie-ai__codemie-code__agent-36541525.jsonl",
     "4c2ddfdc-b619-4525-8d03-1950fb1b0257", "36541525"),  # old layout
    ("claude/marot__spotter__agent-a2898e3.jsonl",
     "4d5611e5-241a-462a-8d15-5122611a9569", "a2898e3"),  # <session>/subagents/ layout
])
def test_subagent_transcripts_name_their_parent(name: str, parent: str, agent_id: str) -> None:
    info = parse_claude(transcript(name)).info
    assert info.is_subagent
    assert info.parent_session == parent
    assert info.session_id == f"{parent}/agent-{agent_id}"


def test_session_info_of_codex_rollouts() -> None:
    info = parse_codex(transcript(CODEX_040)).info
    assert info.session_id == "01997e76-d124-7592-9cac-2ec05abbca08"
    assert info.project == "spectora-labs-monorepo-v2"
    assert info.branch == "fix/team-optimization-v2"
    assert info.model == "gpt-5-codex"
    assert info.agent == "codex"
    assert parse_codex(transcript(CODEX_0125)).info.model == "gpt-5.5"


def test_split_assistant_message_keeps_one_message_id() -> None:
    events = parse_claude(transcript(TINY)).events
    split = [e for e in events if e.message_id == "msg_013AzJvSo29hMdozTKqH2ubu"]
    assert [e.type for e in split] == ["text", "tool_call"]
    assert len({e.uuid for e in split}) == 2  # two lines, one message


def test_a_message_written_twice_is_not_duplicated(tmp_path: Path) -> None:
    w = ClaudeLines()
    blocks = [text("Answer part one."), tool_use("toolu_1", "Bash", {"command": "ls"})]
    lines = [w.user("list files"),
             w.assistant(blocks[:1], msg_id="msg_A"),
             w.assistant(blocks[1:], msg_id="msg_A"),
             w.assistant(blocks, msg_id="msg_A")]  # the whole message again
    events = parse_claude(write_lines(tmp_path / "s.jsonl", lines)).events
    assert Counter(e.type for e in events) == {"text": 2, "tool_call": 1}


def test_sidechain_lines_in_a_main_file_keep_their_own_request(tmp_path: Path) -> None:
    w = ClaudeLines()
    side = ClaudeLines()
    lines = [w.user("main request"),
             json.dumps({**json.loads(side.user("sub-agent task")), "isSidechain": True}),
             json.dumps({**json.loads(side.assistant([text("sub-agent report")], msg_id="s1")),
                         "isSidechain": True}),
             w.assistant([text("main answer")], msg_id="m1")]
    events = parse_claude(write_lines(tmp_path / "s.jsonl", lines)).events
    answers = {e.text: e.prompt for e in events if e.role == "assistant"}
    assert answers == {"sub-agent report": "sub-agent task", "main answer": "main request"}


def test_meta_lines_still_deliver_tool_results(tmp_path: Path) -> None:
    w = ClaudeLines()
    result_line = json.loads(w.tool_result("toolu_9", "done"))
    lines = [w.user("go"), w.assistant([tool_use("toolu_9", "Bash", {"command": "make"})]),
             json.dumps({**result_line, "isMeta": True}),
             w.user("<system-reminder>injected</system-reminder>", isMeta=True)]
    events = parse_claude(write_lines(tmp_path / "s.jsonl", lines)).events
    assert [(e.type, e.tool, e.text) for e in events if e.role != "assistant"] == [
        ("text", None, "go"), ("tool_result", "Bash", "done")]


def test_claude_error_kinds_on_real_files() -> None:
    def kinds(name: str) -> Counter[str | None]:
        return Counter(e.error_kind for e in parse_claude(transcript(name)).events
                       if e.type == "tool_result")

    assert kinds(SHORT)["rejected"] == 2
    assert kinds("claude/marot__spotter__agent-a2898e3.jsonl")["tool_use_error"] == 8
    exits = [e.exit_code for e in parse_claude(
        transcript("claude/codemie-ai__codemie-code__session-196820da.jsonl")).events
        if e.error_kind == "nonzero_exit"]
    assert exits == [1, 1]
    interrupts = [e for e in parse_claude(transcript(SHORT)).events
                  if e.error_kind == "interrupted"]
    assert [e.role for e in interrupts] == ["user"]
    assert interrupts[0].prompt == "mix phx.server doesnt seem to start"


def test_meta_and_command_noise_are_not_requests() -> None:
    events = parse_claude(transcript("claude/marot__spotter__tool_heavy.jsonl")).events
    prompts = [e.text for e in events if e.role == "user" and e.error_kind is None]
    assert prompts == ["start phoenix in background",
                       ("scrolling back in xterm.js still does not work (maybe because outer "
                        "web catches it)? websearch xterm.js tmux interactions")]


def test_codex_error_kinds_and_turn_aborts() -> None:
    events = parse_codex(transcript(CODEX_040)).events
    kinds = Counter(e.error_kind for e in events)
    assert (kinds["interrupted"], kinds["rejected"], kinds["nonzero_exit"]) == (4, 2, 9)
    sandbox = [e for e in events if e.text.startswith("failed in sandbox")]
    assert {e.exit_code for e in sandbox} == {1, 2}
    no_match = [e for e in events if e.type == "tool_result" and e.exit_code == 1
                and e.error_kind is None]
    assert [json.loads(e.tool_input or "")["command"][2] for e in no_match] == [
        'rg "PATCH" apps/spectora-labs/src/app/api/teams']


def test_codex_unified_exec_polls_fold_into_their_command() -> None:
    events = parse_codex(transcript(CODEX_0125)).events
    results = [e for e in events if e.type == "tool_result"]
    calls = [e for e in events if e.type == "tool_call"]
    assert Counter(e.tool for e in calls)["write_stdin"] == 54
    # polls fold into their command; those that read output after the command's end
    # event closed it are results of their own (the model saw that output), never failures
    polls = [e for e in results if e.tool == "write_stdin"]
    assert len(polls) == 20 and all(e.text.strip() and not e.is_error for e in polls)
    execs = [e for e in results if e.tool == "exec_command"]
    assert len(execs) == 43 and all(e.exit_code is not None for e in execs)
    assert all(e.tool_input and "cmd" in json.loads(e.tool_input) for e in execs)


def _codex(kind: str, payload: dict[str, object], second: int) -> str:
    return json.dumps({"timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "type": kind,
                       "payload": payload})


def test_codex_synthetic_session(tmp_path: Path) -> None:
    def call(call_id: str, name: str, args: dict[str, object], t: int) -> str:
        return _codex("response_item", {"type": "function_call", "name": name,
                                        "arguments": json.dumps(args), "call_id": call_id}, t)

    def output(call_id: str, out: str, t: int) -> str:
        return _codex("response_item", {"type": "function_call_output", "call_id": call_id,
                                        "output": out}, t)

    lines = [
        _codex("session_meta", {"id": "sess-x", "cwd": "/w/proj", "git": {"branch": "dev"}}, 0),
        _codex("turn_context", {"model": "gpt-test"}, 1),
        _codex("event_msg", {"type": "user_message",
                             "message": "# Context from my IDE setup:\n## Open tabs:\n- a.py\n"
                                        "## My request for Codex:\nfix the build"}, 2),
        call("c1", "exec_command", {"cmd": "make test"}, 3),
        output("c1", "Chunk ID: 1\nProcess running with session ID 77\nOutput:\ncompiling", 4),
        call("c2", "write_stdin", {"session_id": 77, "chars": ""}, 5),
        output("c2", "Chunk ID: 2\nProcess exited with code 2\nOutput:\nFAILED test_a", 6),
        call("c3", "exec_command", {"cmd": "cd src && grep -rn 'TODO|FIXME' ."}, 7),
        output("c3", "Process exited with code 1\nOutput:\n", 8),
        _codex("event_msg", {"type": "turn_aborted", "reason": "interrupted"}, 9),
    ]
    result = parse_codex(write_lines(tmp_path / "rollout.jsonl", lines))
    assert (result.info.session_id, result.info.project, result.info.branch,
            result.info.model) == ("sess-x", "proj", "dev", "gpt-test")
    results = [e for e in result.events if e.type == "tool_result"]
    assert [(e.tool, e.exit_code, e.error_kind, e.text) for e in results] == [
        ("exec_command", 2, "nonzero_exit", "compiling\nFAILED test_a"),
        ("exec_command", 1, None, ""),  # grep found nothing: not a failure
    ]
    assert results[0].prompt == "fix the build"
    assert [e.error_kind for e in result.events if e.role == "system"] == ["interrupted"]


def test_codex_encrypted_reasoning_yields_no_thinking() -> None:
    events = parse_codex(transcript(CODEX_0125)).events
    assert not [e for e in events if e.type == "thinking"]


def test_sanitized_codex_rollout_keeps_raw_arguments() -> None:
    result = parse_codex(transcript(CODEX_REDACTED))
    assert result.bad_lines == 0
    calls = [e for e in result.events if e.type == "tool_call"]
    assert calls and all(e.tool_input for e in calls)
    assert any(e.tool_input.startswith("[REDACTED") for e in calls if e.tool_input)
    assert Counter(e.type for e in result.events)["summary"] == 1  # the compacted line


def test_codex_user_requests_come_without_injected_context() -> None:
    prompts = [e.text for e in parse_codex(transcript(CODEX_040)).events
               if e.role == "user"]
    assert len(prompts) == 13
    assert not any(p.startswith(("# Context from my IDE setup", "<environment_context>"))
                   for p in prompts)
    assert "Why do we need stats for the team?" in prompts


def test_garbage_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    w = ClaudeLines()
    good = [w.user("hello there"), w.assistant([text("Hi!")])]
    garbage = ["not json at all", "[1, 2, 3]", '{"no_type": true}',
               json.dumps({"type": "user", "message": "a string, not an object"}),
               '{"type": "assistant", "message": {"content": 7}}', ""]
    clean = parse_claude(write_lines(tmp_path / "clean.jsonl", good))
    dirty = parse_claude(write_lines(tmp_path / "dirty.jsonl", garbage[:3] + good + garbage[3:]))
    assert dirty.bad_lines == 5
    assert dirty.skipped_lines == clean.skipped_lines + 1  # the blank line
    assert [(e.type, e.text) for e in dirty.events] == [(e.type, e.text) for e in clean.events]
    codex = write_lines(tmp_path / "rollout.jsonl", ["{broken", '{"type": "event_msg"}'])
    assert parse_codex(codex).bad_lines == 2


def test_truncated_trailing_line_is_left_for_next_time(tmp_path: Path) -> None:
    w = ClaudeLines()
    first = w.user("first question") + "\n"
    second = w.assistant([text("first answer")])
    path = tmp_path / "s.jsonl"
    path.write_text(first + second[:40], encoding="utf-8")
    partial = parse_claude(path)
    assert partial.end_offset == len(first.encode())
    assert partial.bad_lines == 0
    assert [e.text for e in partial.events] == ["first question"]
    path.write_text(first + second + "\n", encoding="utf-8")
    rest = parse_claude(path, start_offset=partial.end_offset, state=partial.state)
    assert [e.text for e in rest.events] == ["first answer"]
    assert rest.events[0].prompt == "first question"  # carried by the state
    assert rest.end_offset == path.stat().st_size


def test_summary_trusted_only_when_its_leaf_is_in_this_file(tmp_path: Path) -> None:
    w = ClaudeLines()
    lines = [w.summary("Early title", leaf="u-leaf"),  # leaf comes later in the file
             w.user("question", uuid="u-leaf"),
             w.assistant([text("answer")], uuid="u-ans"),
             w.summary("Foreign title", leaf="u-elsewhere"),
             w.summary("Late title", leaf="u-ans")]  # leaf came earlier
    result = parse_claude(write_lines(tmp_path / "s.jsonl", lines))
    assert [e.text for e in result.events if e.type == "summary"] == ["Early title",
                                                                       "Late title"]
    assert result.info.title == "Late title"


def test_summaries_pointing_into_other_sessions_are_ignored() -> None:
    for name in ("claude/codemie-ai__codemie-code__session-9eda1058.jsonl",
                 "claude/jnarowski__agentcmd__full-session-five.jsonl",
                 "claude/obra__episodic-memory__medium-conversation.jsonl"):
        result = parse_claude(transcript(name))
        assert result.info.title is None
        assert not [e for e in result.events if e.type == "summary"]


def test_medium_conversation_has_no_events() -> None:
    result = parse_claude(transcript("claude/obra__episodic-memory__medium-conversation.jsonl"))
    assert result.events == ()
    assert result.skipped_lines == 23


def test_foreign_or_stale_state_is_ignored(tmp_path: Path) -> None:
    w = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [w.user("q"), w.assistant([text("a")])])
    fresh = parse_claude(path)
    for state in ({"v": 1, "agent": "codex"}, {"v": 999, "agent": "claude"}, {"junk": True}):
        assert parse_claude(path, state=state).events == fresh.events


def test_unreadable_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(FileRejected):
        parse_claude(tmp_path / "missing.jsonl")


def test_detect_agent(tmp_path: Path) -> None:
    assert detect_agent(write_lines(tmp_path / "a.jsonl", ["junk", ClaudeLines().user("x")])) \
        == "claude"
    codex_line = json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta",
                             "payload": {"id": "x"}})
    assert detect_agent(write_lines(tmp_path / "b.jsonl", [codex_line])) == "codex"
    assert detect_agent(write_lines(tmp_path / "c.jsonl", ['{"hello": 1}'])) is None


@pytest.mark.parametrize(("value", "expected"), [
    ("2025-09-19T17:34:29.181Z", 1758303269.181),
    ("2025-09-19T17:34:29", 1758303269.0),
    (1758303269, 1758303269.0),
    (1758303269181, 1758303269.181),
    ("yesterday", None), (None, None), (True, None),
])
def test_parse_timestamp(value: object, expected: float | None) -> None:
    got = parse_timestamp(value)
    assert got == pytest.approx(expected) if expected is not None else got is None


@pytest.mark.parametrize(("cwd", "project"), [
    ("/Users/a/src/ctx", "ctx"), ("/Users/a/src/ctx/", "ctx"),
    ("/repo/.worktrees/feature-x", "repo"), ("C:\\Users\\a\\proj", "proj"), ("", None),
])
def test_project_from_cwd(cwd: str, project: str | None) -> None:
    assert project_from_cwd(cwd) == project
