"""Incremental sync: the sync plan, and parsing a growing file piece by piece.

Reading a transcript in pieces (with the parser state carried over through
JSON, as sync stores it) must give exactly the chunks of reading it whole:
same keys, texts, ordinals and metadata, and no chunk emitted twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.recall.model import HEAD_BYTES
from engine.recall.syncplan import FileState, next_state, plan, read_head
from tests.conftest import shared_data
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    chunks_of,
    parse_any,
    text,
    tool_use,
    transcript,
    whole,
    write_lines,
)
from tests.engine.recall.test_recall_chunks import PINNED


def _line_cut(data: bytes, fraction: float) -> int:
    newline = data.find(b"\n", int(len(data) * fraction))
    return len(data) if newline < 0 else newline + 1


def _sync_in_pieces(source: Path, work: Path, cuts: list[int]) -> tuple[list, list]:
    """Grow ``work`` to each cut of ``source`` in turn, syncing after each growth."""
    data = source.read_bytes()
    events: list = []
    chunks: list = []
    previous: FileState | None = None
    for cut in [*cuts, len(data)]:
        work.write_bytes(data[:cut])
        decision = plan(work, os.stat(work), read_head(work), previous)
        if decision == "skip":
            continue
        assert decision == "full" if previous is None else decision == ("append",
                                                                          previous.offset)
        stat = os.stat(work)
        if previous is None:
            result = parse_any(work)
        else:
            state = json.loads(json.dumps(previous.parser_state))
            result = parse_any(work, start_offset=previous.offset, state=state)
        events.extend(result.events)
        chunks.extend(chunks_of(result, start_ordinal=len(chunks)))
        previous = FileState.from_dict(json.loads(json.dumps(next_state(work, stat,
                                                                        result).to_dict())))
    return events, chunks


@pytest.mark.parametrize("name", sorted(PINNED))
def test_halves_equal_whole(name: str, tmp_path: Path) -> None:
    source = transcript(name)
    result, whole_chunks = whole(name)
    data = source.read_bytes()
    for fraction in (0.4, 0.75):
        work = tmp_path / f"{fraction}-{source.name}"
        events, chunks = _sync_in_pieces(source, work, [_line_cut(data, fraction)])
        assert tuple(events) == result.events
        assert chunks == list(whole_chunks)


def test_many_small_appends_equal_whole(tmp_path: Path) -> None:
    source = transcript("claude/codemie-ai__codemie-code__session-9eda1058.jsonl")
    data = source.read_bytes()
    cuts = sorted({_line_cut(data, i / 12) for i in range(1, 12)})
    events, chunks = _sync_in_pieces(source, tmp_path / source.name, cuts)
    whole = parse_any(source)
    assert tuple(events) == whole.events
    assert chunks == chunks_of(whole)
    assert len({c.meta["key"] for c in chunks}) == len(chunks)


def test_appending_one_turn_reads_only_the_new_bytes(tmp_path: Path) -> None:
    w = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [w.user("first"), w.assistant([text("one")])])
    first = parse_any(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(w.user("second") + "\n" + w.assistant([text("two")], msg_id="m2") + "\n")
    state = next_state(path, os.stat(path), first)
    state.size -= 1  # as recorded before the append
    decision = plan(path, os.stat(path), read_head(path), state)
    assert decision == ("append", first.end_offset)
    rest = parse_any(path, start_offset=first.end_offset, state=first.state)
    assert [e.text for e in rest.events] == ["second", "two"]
    assert [c.text for c in chunks_of(rest)] == ["User: second\nAssistant: two"]


def test_summary_leaf_in_a_later_append_is_trusted(tmp_path: Path) -> None:
    w = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines.summary("Title", leaf="u-late")])
    first = parse_any(path)
    assert first.info.title is None
    with path.open("a", encoding="utf-8") as fh:
        fh.write(w.user("q", uuid="u-late") + "\n")
    rest = parse_any(path, start_offset=first.end_offset, state=first.state)
    assert rest.info.title == "Title"


# ------------------------------------------------------------------ plan()


def _state_for(path: Path) -> FileState:
    return next_state(path, os.stat(path), parse_any(path))


def test_plan_first_sync_is_full(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines().user("q")])
    assert plan(path, os.stat(path), read_head(path), None) == "full"


def test_plan_unchanged_file_is_skipped_without_reading(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines().user("q")])
    state = _state_for(path)
    assert plan(path, os.stat(path), b"", state) == "skip"  # head bytes not even needed


def test_plan_touched_but_same_bytes_is_skipped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines().user("q")])
    state = _state_for(path)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert plan(path, os.stat(path), read_head(path), state) == "skip"


def test_plan_small_file_growing_past_head_size_appends(tmp_path: Path) -> None:
    w = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [w.user("q")])
    state = _state_for(path)
    assert state.size < HEAD_BYTES
    with path.open("a", encoding="utf-8") as fh:
        for i in range(60):
            fh.write(w.assistant([text(f"answer {i} " * 10)], msg_id=f"m{i}") + "\n")
    assert os.stat(path).st_size > HEAD_BYTES
    assert plan(path, os.stat(path), read_head(path), state) == ("append", state.offset)


def test_plan_shrunk_or_rewritten_file_is_read_in_full(tmp_path: Path) -> None:
    w = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [w.user("question one"), w.user("question two")])
    state = _state_for(path)
    write_lines(path, [w.user("question one")])  # shrank
    assert plan(path, os.stat(path), read_head(path), state) == "full"
    other = ClaudeLines(session="another")
    write_lines(path, [other.user("question ONE"), other.user("question two"),
                       other.user("and a third")])  # grew, but the head changed
    assert plan(path, os.stat(path), read_head(path), state) == "full"


def test_plan_other_path_is_full(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines().user("q")])
    state = _state_for(path)
    assert plan(tmp_path / "t.jsonl", os.stat(path), read_head(path), state) == "full"


def test_file_state_round_trip_and_rejects_junk(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [ClaudeLines().user("q")])
    state = _state_for(path)
    again = FileState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again == state
    assert FileState.from_dict({"path": "x"}) is None
    assert FileState.from_dict({**state.to_dict(), "offset": -1}) is None


@pytest.mark.parametrize("name", [
    "transcripts-public/claude/entireio__cli__253fd5ef-38bf-4f4a-804a-98df5088a868.jsonl",
    ("transcripts/codex/codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-"
     "019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"),
])
def test_pieces_ending_mid_turn_without_newline_equal_whole(name: str, tmp_path: Path) -> None:
    """Cut where a record ends, before its newline (the last-line rule takes it, the next
    sync skips the newline), anywhere: inside a user's ``!`` command and its output, a
    call and its result, a Codex command and its polls; the same events and chunks."""
    source = shared_data(*name.split("/"))
    data = source.read_bytes()
    cuts = sorted({_line_cut(data, i / 16) - 1 for i in range(1, 16)})
    events, chunks = _sync_in_pieces(source, tmp_path / source.name, cuts)
    whole_result = parse_any(source)
    assert tuple(events) == whole_result.events
    assert chunks == chunks_of(whole_result)
    assert len({c.meta["key"] for c in chunks}) == len(chunks)


def test_shell_command_and_its_output_in_two_syncs(tmp_path: Path) -> None:
    w = ClaudeLines()
    source = write_lines(tmp_path / "source.jsonl", [
        w.user("<bash-input>make test</bash-input>"),
        w.user("<bash-stdout>3 passed</bash-stdout><bash-stderr></bash-stderr>"),
        w.user("thanks, now the docs"),
        w.assistant([tool_use("t1", "Read", {"file_path": "/w/README.md"})]),
        w.user("never mind"),
    ])
    data = source.read_bytes()
    cuts = [data.index(b"\n") + 1, _line_cut(data, 0.7) - 1]  # between them; mid-call
    events, chunks = _sync_in_pieces(source, tmp_path / "work.jsonl", cuts)
    whole_result = parse_any(source)
    assert tuple(events) == whole_result.events
    assert chunks == chunks_of(whole_result)
    assert [c.text for c in chunks] == [
        "Tool user shell: make test\nResult: 3 passed",
        "User: thanks, now the docs\nTool Read: /w/README.md\nResult (none recorded)"]
