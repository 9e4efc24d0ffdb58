"""A transcript's last line with no newline: taken when it is a whole record, once.

Most public Claude Code files end without a newline; that last line is often the
session's closing summary. It is read when it parses as a whole JSON object, and
a file still being written (cut mid-record) keeps its tail for the next sync.
Whatever the writer appends later (a newline and more records, or more bytes on
that same line), no record is stored twice.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from engine.facade import ContextEngine
from engine.recall.model import read_complete_lines
from engine.recall.syncplan import FileState, next_state, plan, read_head
from tests.conftest import shared_data
from tests.engine.recall.recall_helpers import ClaudeLines, chunks_of, parse_any, text

# A public Claude Code session whose last line (the closing answer) has no newline.
APPENDED_TURN = ("User: now add the worktree cleanup to the release notes\n"
                 "Assistant: Added the cleanup note under Fixes in RELEASE.md.")
PUBLIC = "entireio__cli__b2273d7d-fb20-41f7-93fb-265486aae975.jsonl"


def _public(tmp_path: Path) -> Path:
    src = shared_data("transcripts-public", "claude", PUBLIC)
    dst = tmp_path / "claude" / PUBLIC
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    assert not dst.read_bytes().endswith(b"\n")
    return dst


def _last_answer(path: Path) -> str:
    last = json.loads(path.read_bytes().rsplit(b"\n", 1)[-1])
    return next(b["text"] for b in last["message"]["content"] if b["type"] == "text")


def _stored(engine: ContextEngine) -> list:
    vault = engine.rt.vault
    return list(vault.chunks(vault.chunk_ids()).values())


def test_unterminated_last_record_is_read(tmp_path: Path) -> None:
    path = _public(tmp_path)
    result = parse_any(path)
    assert result.end_offset == path.stat().st_size
    closing = _last_answer(path)
    answers = [e.text for e in result.events if e.role == "assistant" and e.type == "text"]
    assert answers[-1] == closing
    words = " ".join(closing.split()[:8])
    assert any(words in " ".join(c.text.split()) for c in chunks_of(result))


def test_record_cut_mid_write_waits_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    claude = ClaudeLines()
    first = claude.user("why does the build fail")
    second = claude.assistant([text("The linker flag was missing.")])
    path.write_bytes((first + "\n" + second[:-10]).encode())
    lines, end = read_complete_lines(path, 0)
    assert [raw for _, raw in lines] == [first.encode()] and end == len(first) + 1
    with path.open("ab") as fh:  # the writer finishes the record (still no newline)
        fh.write(second[-10:].encode())
    lines, end = read_complete_lines(path, end)
    assert [raw for _, raw in lines] == [second.encode()] and end == path.stat().st_size
    assert read_complete_lines(path, end) == ([], end)


def _sync(path: Path, previous: FileState | None) -> tuple[list, FileState | None]:
    """One sync of ``path`` as recall sync does it (plan, parse from the recorded offset
    with the recorded state, passed through JSON): its chunks and the new state."""
    decision = plan(path, os.stat(path), read_head(path), previous)
    if decision == "skip":
        return [], previous
    stat = os.stat(path)
    if decision == "full":
        result = parse_any(path)
    else:
        assert previous is not None
        result = parse_any(path, start_offset=decision[1],
                           state=json.loads(json.dumps(previous.parser_state)))
    state = FileState.from_dict(json.loads(json.dumps(next_state(path, stat, result).to_dict())))
    return chunks_of(result), state


def _grown_public(tmp_path: Path) -> tuple[Path, bytes, str, str]:
    """The public session, and one more turn to append (a request and its answer)."""
    path = _public(tmp_path)
    claude = ClaudeLines(session="e3c1")
    request = claude.user("now add the worktree cleanup to the release notes")
    answer = claude.assistant([text("Added the cleanup note under Fixes in RELEASE.md.")],
                              msg_id="msg_appended")
    return path, path.read_bytes(), request, answer


def test_newline_and_more_records_appended_store_nothing_twice(tmp_path: Path) -> None:
    path, original, request, answer = _grown_public(tmp_path)
    first, state = _sync(path, None)
    assert state is not None and state.offset == len(original)
    with path.open("ab") as fh:  # the writer goes on: the newline, then new lines
        fh.write(("\n" + request + "\n" + answer).encode())
    second, state = _sync(path, state)
    assert state is not None and state.offset == path.stat().st_size
    keys = [c.meta["key"] for c in first + second]
    assert len(keys) == len(set(keys))
    assert [c.text for c in second] == [APPENDED_TURN]
    # the same chunks as reading the final file whole, once each
    whole = chunks_of(parse_any(path))
    assert [c.meta["key"] for c in whole] == keys
    assert [c.text for c in whole] == [c.text for c in first + second]


def test_bytes_appended_to_the_same_line(tmp_path: Path) -> None:
    """Nothing but blanks can continue a whole JSON object: blanks are skipped, a record
    glued on without a newline is read as its own, anything else is one bad line; the
    record already read is never read again."""
    path, _, request, answer = _grown_public(tmp_path)
    first, state = _sync(path, None)
    with path.open("ab") as fh:
        fh.write(b"   ")
    blank, state = _sync(path, state)
    assert blank == []
    with path.open("ab") as fh:
        fh.write(request.encode())  # glued onto the same line, no newline between
    glued, state = _sync(path, state)
    assert glued == []  # a request alone makes no chunk until it is answered
    with path.open("ab") as fh:
        fh.write(('{"type": "assistant", "mess' + "\n" + answer + "\n").encode())
    assert state is not None
    result = parse_any(path, start_offset=state.offset,
                       state=json.loads(json.dumps(state.parser_state)))
    assert result.bad_lines == 1
    later = chunks_of(result)
    assert [c.text for c in later] == [APPENDED_TURN]
    keys = [c.meta["key"] for c in first + later]
    assert len(keys) == len(set(keys))


def test_sync_stores_the_closing_answer_once(engine: ContextEngine, tmp_path: Path) -> None:
    path, _, request, answer = _grown_public(tmp_path)
    folder = path.parent
    closing = " ".join(_last_answer(path).split()[:8])

    def holding(words: str) -> list:
        return [c for c in _stored(engine) if words in " ".join(c.text.split())]

    res = engine.sync([str(folder)])
    assert res.full == 1 and res.bad_lines == 0
    assert len(holding(closing)) == 1
    count = engine.status().chunks

    again = engine.sync([str(folder)])
    assert again.unchanged == 1 and again.chunks == 0 and engine.status().chunks == count

    with path.open("ab") as fh:
        fh.write(("\n" + request + "\n" + answer).encode())
    grown = engine.sync([str(folder)])
    assert grown.appended == 1 and grown.bad_lines == 0 and grown.chunks == 1
    assert engine.status().chunks == count + 1
    assert len(holding(closing)) == 1
    assert len(holding("Added the cleanup note under Fixes")) == 1
