"""Chunk extraction from transcripts: kinds, failures, sizes, keys and text."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.recall.chunk_text import head_tail, split_code, split_text, summarize_input
from engine.recall.chunks import acknowledges_mistake
from engine.recall.claude import parse_claude
from engine.recall.config import RecallChunkConfig
from engine.tokens import TokenCounter
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    chunks_of,
    text,
    tool_use,
    transcript,
    whole,
    write_lines,
)

KINDS = ("turn_pair", "thinking", "session_code", "tool")

# Chunks per kind (turn_pair, thinking, code, tool) and failures per error kind of
# every shared transcript, with the default configs. Computed once with this
# code, then reviewed by eye against the files and SOURCES.md: e.g. large has
# 22 is_error results = 14 real tool errors + 6 <tool_use_error> + 1 rejection
# + 1 interruption, and 4 "[Request interrupted...]" markers (5 interrupted
# failures); codex 0.40 has 8 non-zero exit_code outputs + 2 sandbox failures,
# one of which is an `rg` that found nothing (exit 1, no output: not a failure,
# as Claude Code's own harness treats it), so 9 nonzero_exit, plus 4
# turn_aborted and 2 rejected patches (not failures); likewise 1 of AcidicSoil's
# 3 and 2 of the 0.125 rollout's 4 non-zero exits are empty `rg` searches;
# a2898e3's 7 "Sibling tool call errored" results make no chunk (33 - 7 = 26);
# the 0.125 rollout's reasoning is encrypted only (0 thinking); every
# acknowledged_mistake was read and is a real admission of a mistake. The
# codemie rollout's 20 write_stdin polls that read output after the command's end
# event are tool chunks of their own (71 = 51 + 20; the model saw that output);
# acompact's 3 tool chunks are its user's hooks' notes (2 compile errors, a Credo
# warning) that came in isMeta lines.
# Not counted here: the parts that hold a long request, a call's whole input or
# its whole output (meta "part"), pinned in test_recall_coverage.
PINNED: dict[str, tuple[tuple[int, int, int, int], dict[str, int]]] = {
    "claude/codemie-ai__codemie-code__4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl":
        ((4, 0, 0, 6), {}),
    "claude/codemie-ai__codemie-code__agent-36541525.jsonl": ((12, 0, 6, 0), {}),
    "claude/codemie-ai__codemie-code__session-196820da.jsonl":
        ((66, 57, 92, 65), {"acknowledged_mistake": 2, "nonzero_exit": 2}),
    "claude/codemie-ai__codemie-code__session-9eda1058.jsonl":
        ((8, 4, 3, 3), {"interrupted": 1}),
    "claude/jnarowski__agentcmd__full-session-five.jsonl": ((3, 0, 0, 5), {}),
    "claude/jnarowski__agentcmd__full-session-three.jsonl": ((4, 0, 0, 20), {}),
    "claude/jnarowski__agentcmd__full-session-two.jsonl": ((8, 0, 0, 10), {"interrupted": 2}),
    "claude/marot__spotter__agent-a2898e3.jsonl": ((19, 0, 9, 26), {}),
    "claude/marot__spotter__agent-acompact-e1f845.jsonl": ((15, 0, 1, 3), {}),
    "claude/marot__spotter__short.jsonl": ((2, 1, 0, 2), {"interrupted": 1}),
    "claude/marot__spotter__tool_heavy.jsonl": ((3, 1, 0, 6), {"interrupted": 2}),
    "claude/obra__episodic-memory__large-conversation.jsonl":
        ((130, 0, 3, 152), {"acknowledged_mistake": 3, "interrupted": 5, "tool_error": 14}),
    "claude/obra__episodic-memory__long-conversation.jsonl":
        ((46, 11, 24, 98), {"acknowledged_mistake": 2, "tool_error": 4}),
    "claude/obra__episodic-memory__medium-conversation.jsonl": ((0, 0, 0, 0), {}),
    "claude/obra__episodic-memory__tiny-conversation.jsonl": ((3, 0, 1, 1), {}),
    "codex/AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28-"
    "019a93b9-f380-7600-98ff-940e6b99603c.jsonl": ((0, 4, 0, 39), {"nonzero_exit": 2}),
    "codex/codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-"
    "019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": ((13, 0, 1, 71), {"nonzero_exit": 2}),
    "codex/jnarowski__agentcmd__rollout-2025-09-24T19-22-20-"
    "01997e76-d124-7592-9cac-2ec05abbca08.jsonl":
        ((14, 24, 0, 123), {"interrupted": 4, "nonzero_exit": 9}),
    "codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-"
    "019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": ((4, 4, 0, 34), {}),
    "codex/madshn__localpush__rollout-2026-02-23T12-54-34-"
    "019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl": ((255, 174, 0, 372), {}),
    "codex/madshn__localpush__rollout-2026-02-23T20-34-25-"
    "019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": ((6, 5, 0, 5), {}),
}
META_KEYS = {"session", "project", "branch", "model", "agent", "failure", "error_kind", "tool",
             "key"}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_chunk_counts_and_failures(name: str) -> None:
    _, chunks = whole(name)
    own = [c for c in chunks if "part" not in c.meta]  # not a whole request, input or output
    kinds = Counter(c.kind for c in own)
    failures = Counter(c.meta["error_kind"] for c in own if c.meta["failure"])
    assert (tuple(kinds[k] for k in KINDS), dict(failures)) == PINNED[name]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_chunk_invariants(name: str) -> None:
    counter = TokenCounter.shared()
    result, chunks = whole(name)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    keys = [c.meta["key"] for c in chunks]
    assert len(set(keys)) == len(keys)
    for chunk in chunks:
        assert chunk.kind in KINDS
        assert 0 < chunk.tokens <= 400
        assert chunk.tokens == counter.count(chunk.text)
        assert META_KEYS <= set(chunk.meta)
        assert chunk.meta["session"] == result.info.session_id
        assert chunk.meta["key"].startswith(f"{result.info.agent}:{result.info.session_id}:")
        assert isinstance(chunk.meta["failure"], bool)
        if chunk.kind == "session_code":
            assert "language" in chunk.meta and "```" in chunk.text
        if chunk.meta.get("part") == "request":
            assert chunk.kind == "turn_pair" and chunk.text.startswith("User (request")
        elif chunk.meta.get("part") in ("input", "output"):
            assert chunk.kind == "tool"
            assert chunk.text.startswith(f"Tool {chunk.meta['tool']} ({chunk.meta['part']}")
        elif chunk.kind == "tool":  # the request and the intent, then the call
            head, _, call = chunk.text.partition(f"Tool {chunk.meta['tool']}: ")
            assert call and all(line.startswith(("User: ", "Assistant: "))
                                for line in head.split("\n") if line)
        if chunk.kind in ("turn_pair", "thinking") and "part" not in chunk.meta:
            assert chunk.text.startswith(("User: ", "Assistant"))
        if chunk.meta["error_kind"] in ("rejected", "tool_use_error"):
            assert chunk.meta["failure"] is False


def test_chunk_texts_read_as_turns_tools_and_code() -> None:
    chunks = chunks_of(parse_claude(transcript(
        "claude/obra__episodic-memory__tiny-conversation.jsonl")))
    by_kind = {c.kind: c for c in chunks}
    code = by_kind["session_code"]
    assert code.meta["language"] == "markdown"
    assert code.text.startswith("Code (markdown): ")
    assert "## Taking Action" in code.text
    pair = [c for c in chunks if c.kind == "turn_pair"][-1]
    assert pair.text.startswith("User: What's the right way to fix the instructions?\n"
                                "Assistant: Here's what I'd change:")
    assert "[code: markdown, 7 lines]" in pair.text and "## Taking Action" not in pair.text
    tool = by_kind["tool"]
    assert "\nTool mcp__private-journal__process_thoughts: feelings=" in tool.text
    assert tool.text.endswith("Result: Thoughts recorded successfully.")
    assert pair.meta["model"] == "claude-opus-4-1-20250805"
    assert pair.meta["branch"] == "feature-branch"
    assert pair.time == pytest.approx(1758303437.0, abs=60)


def test_failed_command_chunk_shows_exit_code(tmp_path: Path) -> None:
    w = ClaudeLines()
    lines = [w.user("run the tests"),
             w.assistant([tool_use("toolu_1", "Bash", {"command": "pytest -q",
                                                        "timeout": 1000})]),
             w.tool_result("toolu_1", "Exit code 2\nE   assert 1 == 2\n1 failed", is_error=True),
             w.assistant([tool_use("toolu_2", "Read", {"file_path": "/x.py"})], msg_id="m2"),
             w.tool_result("toolu_2", "<tool_use_error>File does not exist.</tool_use_error>",
                           is_error=True)]
    chunks = chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)), start_ordinal=40)
    failed, refused = chunks
    assert (failed.ordinal, refused.ordinal) == (40, 41)
    assert failed.text == ("User: run the tests\nTool Bash: pytest -q\n"
                           "Result (exit 2): Exit code 2\nE   assert 1 == 2\n1 failed")
    assert (failed.meta["failure"], failed.meta["error_kind"], failed.meta["exit_code"]) == (
        True, "nonzero_exit", 2)
    assert refused.text == ("User: run the tests\nTool Read: /x.py\n"
                            "Result (refused by the harness): File does not exist.")
    assert (refused.meta["failure"], refused.meta["error_kind"]) == (False, "tool_use_error")
    assert failed.meta["key"].endswith(":tool:toolu_1")


def test_long_answers_split_into_parts_that_repeat_the_question(tmp_path: Path) -> None:
    w = ClaudeLines()
    paragraphs = [f"Paragraph {i}: " + "the cache must be invalidated on write. " * 12
                  for i in range(12)]
    lines = [w.user("Why is the cache stale?"), w.assistant([text("\n\n".join(paragraphs))])]
    chunks = chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)))
    assert len(chunks) > 2 and {c.kind for c in chunks} == {"turn_pair"}
    assert chunks[0].text.startswith("User: Why is the cache stale?\nAssistant: Paragraph 0")
    assert all(c.text.startswith("User: Why is the cache stale?\nAssistant (continued): ")
               for c in chunks[1:])
    assert [c.meta["key"][-2:] for c in chunks] == [f"#{i}" for i in range(len(chunks))]
    body = "".join(c.text.split("Assistant", 1)[1] for c in chunks)
    assert all(f"Paragraph {i}:" in body for i in range(12))


def test_thinking_chunks_skip_bare_headings(tmp_path: Path) -> None:
    w = ClaudeLines()
    long_thought = "I should check the parser first because the offsets look wrong. " * 3
    lines = [w.user("why?"),
             w.assistant([{"type": "thinking", "thinking": "**Checking files**"}], msg_id="a"),
             w.assistant([{"type": "thinking", "thinking": long_thought}], msg_id="b")]
    chunks = chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)))
    assert [c.kind for c in chunks] == ["thinking"]
    assert chunks[0].text.startswith("User: why?\nAssistant (thinking): I should check")


def test_acknowledged_mistakes_are_failures(tmp_path: Path) -> None:
    w = ClaudeLines()
    lines = [w.user("is it committed?"),
             w.assistant([text("You're right, I missed four files. Committing them now.")]),
             w.user("and the tests?"),
             w.assistant([text("You're right that tests matter; they all pass.")], msg_id="m2")]
    chunks = chunks_of(parse_claude(write_lines(tmp_path / "s.jsonl", lines)))
    assert [(c.meta["failure"], c.meta["error_kind"]) for c in chunks] == [
        (True, "acknowledged_mistake"), (False, None)]
    quiet = chunks_of(parse_claude(tmp_path / "s.jsonl"),
                      cfg=RecallChunkConfig(mistake_patterns=()))
    assert not any(c.meta["failure"] for c in quiet)


@pytest.mark.parametrize(("sentence", "expected"), [
    ("I made a mistake in the migration.", True),
    ("My mistake: the flag is inverted.", True),
    ("That was wrong; reverting.", True),
    ("I apologize for the confusion.", True),
    ("You\u2019re absolutely right, I forgot the index.", True),
    ("Wait, that's not right either.", True),
    ("I incorrectly assumed UTC.", True),
    ("The tests pass and the build is green.", False),
    ("You're right that this is a trade-off.", False),
    ("This mistake is common in config files.", False),
])
def test_acknowledges_mistake(sentence: str, expected: bool) -> None:
    assert acknowledges_mistake(sentence, RecallChunkConfig()) is expected


@pytest.mark.parametrize("kwargs", [
    {"max_tokens": 10}, {"question_tokens": 0}, {"question_tokens": 300},
    {"tool_input_tokens": 200, "tool_output_tokens": 200}, {"min_thinking_tokens": -1},
    {"mistake_patterns": ("(unclosed",)}, {"max_parts": 0},
])
def test_config_rejects_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RecallChunkConfig(**kwargs)  # type: ignore[arg-type]


def test_split_code_handles_unclosed_fences_and_languages() -> None:
    prose, blocks = split_code("Edit `app/main.py` like this:\n```\nprint(1)\n```\n"
                               "Then run:\n~~~bash\nmake\n")
    assert [(b.language, b.code) for b in blocks] == [("python", "print(1)"), ("bash", "make")]
    assert blocks[0].context == "Edit `app/main.py` like this:"
    assert prose == "Edit `app/main.py` like this:\n[code: python, 1 lines]\nThen run:\n" \
                    "[code: bash, 1 lines]"


def test_summarize_input_prefers_what_the_call_does() -> None:
    assert summarize_input('{"command": ["bash", "-lc", "rg foo"], "workdir": "/w"}') == "rg foo"
    assert summarize_input('{"pattern": "*.py", "path": "/src"}') == "*.py; path=/src"
    assert summarize_input('{"plan": [{"step": "a", "status": "done"}]}') == "[done] a"
    assert summarize_input("[REDACTED_ARGUMENTS len=3]") == "[REDACTED_ARGUMENTS len=3]"
    patch = "*** Begin Patch\n*** Update File: src/a.ts\n@@\n-x\n+y\n*** End Patch"
    assert summarize_input(patch).startswith("Update File: src/a.ts\n")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300),
                max_size=12), st.integers(min_value=8, max_value=60))
def test_split_text_pieces_fit_and_keep_the_words(paragraphs: list[str], budget: int) -> None:
    counter = TokenCounter.shared()
    source = "\n\n".join(paragraphs)
    pieces = split_text(counter, source, budget)
    assert all(counter.count(p) <= budget for p in pieces)
    assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", source) or not source.strip()


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=4000), st.integers(min_value=8, max_value=200))
def test_head_tail_fits(output: str, n: int) -> None:
    counter = TokenCounter.shared()
    cut = head_tail(counter, output, n)
    assert counter.count(cut) <= n
    if counter.count(output) <= n:
        assert cut == output
