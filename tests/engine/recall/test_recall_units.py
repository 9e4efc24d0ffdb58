"""Recall units that answer (issue 26): a tool call says why it ran, hook notes are kept
as the user's project facts, harness boilerplate is not, and nothing private leaks
through the intent kept across parses."""

from __future__ import annotations

import json
from pathlib import Path

from engine.recall.claude import parse_claude, split_reminders
from tests.engine.recall.recall_helpers import ClaudeLines, chunks_of, text, tool_use, write_lines

BOILERPLATE = ("<system-reminder>\nWhenever you read a file, you should consider whether it "
               "would be considered malware.\n</system-reminder>")


def test_a_tool_call_carries_the_request_and_the_words_that_led_to_it(tmp_path: Path) -> None:
    w = ClaudeLines()
    lines = [w.user("why is the release job red?"),
             w.assistant([text("I'll pull the failing job's log to see the real error.")]),
             w.assistant([tool_use("toolu_1", "Bash", {"command": "gh run view 42 --log-failed"})],
                         msg_id="m2"),
             w.tool_result("toolu_1", "Exit code 1\nnotarize: field retry not found",
                           is_error=True),
             w.user("thanks, and the lint?"),
             w.assistant([tool_use("toolu_2", "Bash", {"command": "make lint"})], msg_id="m3"),
             w.tool_result("toolu_2", "0 issues")]
    first, second = [c for c in chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)))
                     if c.kind == "tool"]
    assert first.text.startswith(
        "User: why is the release job red?\n"
        "Assistant: I'll pull the failing job's log to see the real error.\n"
        "Tool Bash: gh run view 42 --log-failed\nResult (exit 1): ")
    assert first.meta["failure"] is True
    # a new request: what was said for the previous one is not this call's intent
    assert second.text.startswith("User: thanks, and the lint?\nTool Bash: make lint\n")


def test_the_intent_survives_a_parse_in_pieces(tmp_path: Path) -> None:
    w = ClaudeLines()
    head = [w.user("fix the flaky test"),
            w.assistant([text("The test races on the working directory; let me read it.")]),
            w.assistant([tool_use("toolu_1", "Read", {"file_path": "/a_test.go"})], msg_id="m2")]
    tail = [w.tool_result("toolu_1", "package a")]
    path = write_lines(tmp_path / "s.jsonl", head)
    first = parse_claude(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(tail) + "\n")
    state = json.loads(json.dumps(first.state))
    rest = parse_claude(path, start_offset=first.end_offset, state=state)
    (tool,) = [c for c in chunks_of(rest) if c.kind == "tool"]
    assert "Assistant: The test races on the working directory; let me read it.\n" in tool.text
    assert [c.text for c in chunks_of(parse_claude(path)) if c.kind == "tool"] == [tool.text]


def test_hook_notes_are_kept_and_harness_reminders_are_not(tmp_path: Path) -> None:
    note = ("<system-reminder>\nPostToolUse:Edit hook additional context: [COMPILE ERROR] "
            "undefined: parseConfig\n</system-reminder>")
    w = ClaudeLines()
    lines = [w.user("rename parseCfg"),
             w.assistant([tool_use("toolu_1", "Edit", {"file_path": "/c.go"})]),
             w.tool_result("toolu_1", f"The file /c.go has been updated.{note}"),
             w.assistant([tool_use("toolu_2", "Read", {"file_path": "/d.go"})], msg_id="m2"),
             w.tool_result("toolu_2", f"package d{BOILERPLATE}"),
             w.user("UserPromptSubmit hook additional context: never here "
                    "<system-reminder>UserPromptSubmit hook additional context: the staging "
                    "database is read-only</system-reminder> go on")]
    chunks = chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)))
    tools = [c for c in chunks if c.kind == "tool"]
    joined = "\n".join(c.text for c in chunks)
    assert "[PostToolUse hook] [COMPILE ERROR] undefined: parseConfig" in tools[0].text
    assert "malware" not in joined and "system-reminder" not in joined
    assert tools[1].text.endswith("Result: package d")
    hook = next(c for c in tools if c.meta["tool"] == "hook")
    assert hook.text.endswith("Result: the staging database is read-only")


def test_split_reminders_keeps_only_hook_context() -> None:
    kept, notes = split_reminders(f"a{BOILERPLATE}b<system-reminder>SessionStart hook "
                                  "additional context: uses pnpm</system-reminder>c")
    assert (kept, notes) == ("abc", [("SessionStart", "uses pnpm")])


def test_a_private_span_cut_by_the_intent_tail_never_reaches_a_chunk(tmp_path: Path) -> None:
    w = ClaudeLines()
    secret = "the staging password is hunter2-" + "x" * 400
    lines = [w.user("deploy"),
             w.assistant([text(f"<private>{secret}</private> Deploying now.")]),
             w.assistant([tool_use("toolu_1", "Bash", {"command": "make deploy"})], msg_id="m2"),
             w.tool_result("toolu_1", "done")]
    result = parse_claude(write_lines(tmp_path / "s.jsonl", lines))
    everything = json.dumps([c.text for c in chunks_of(result)] + [result.state])
    assert "hunter2" not in everything and "xxxx" not in everything
    (tool,) = [c for c in chunks_of(result) if c.kind == "tool"]
    assert "Assistant: Deploying now.\n" in tool.text
