"""A call still waiting for its result where a transcript ends is stored, and completed.

The file's last call (the session stopped mid-call, or the agent is still running it)
is findable after the sync that reads it: its chunk says "Result (pending)". When a
later sync reads its result (or the next request), the call is stored for good and the
pending chunk goes: the store then holds exactly what one sync of the whole file
stores (the same chunks, ordinals and texts; nothing twice). Set B's b3-043 (a
`git ls-files | grep -E` call, the last of its file) was lost this way.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from engine.facade import ContextEngine
from engine.recall.codex import parse_codex
from engine.store.vault import adapt as adapt_rows
from tests.conftest import shared_data
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    chunks_of,
    parse_any,
    text,
    tool_use,
    write_lines,
)

COMMAND = 'git ls-files | grep -E "\\.env$|\\.env\\."'
QUESTION = "how was it checked whether the environment files were tracked by git"


def _stored(engine: ContextEngine) -> list[tuple[Any, ...]]:
    """Every stored chunk as what a sync decides of it (not its source's uri or id)."""
    vault = engine.rt.vault
    rows = vault.chunks(vault.chunk_ids()).values()
    return sorted((r.ordinal, r.kind, r.heading, r.text, r.tokens, r.start, r.time,
                   json.dumps(r.meta, sort_keys=True), r.title, r.project) for r in rows)


def _one_shot(tmp_path: Path, path: Path) -> list[tuple[Any, ...]]:
    """What one sync of the whole file stores, in a store of its own."""
    whole = tempfile.mkdtemp(prefix="whole-", dir=tmp_path)
    folder = Path(whole) / "sessions"
    folder.mkdir()
    (folder / path.name).write_bytes(path.read_bytes())
    other = ContextEngine.open(Path(whole) / "store")
    try:
        other.sync([str(folder)])
        return _stored(other)
    finally:
        other.close()


def _holding(engine: ContextEngine, words: str) -> list[str]:
    return [row[3] for row in _stored(engine) if words in row[3]]


def _claude_session(folder: Path) -> tuple[Path, ClaudeLines]:
    claude = ClaudeLines(cwd="/home/u/src/monorepo")
    path = write_lines(folder / "s.jsonl", [
        claude.user("audit the monorepo for secrets and key files"),
        claude.assistant([text("I will look for env files first.")], msg_id="m1"),
        claude.assistant([tool_use("t1", "Bash", {"command": "find . -name '.env*'"})],
                         msg_id="m1"),
        claude.tool_result("t1", "./apps/app/.env\n./apps/app/.env.example"),
        claude.assistant([text("Two env files. Are they committed?")], msg_id="m2"),
        claude.assistant([tool_use("t2", "Bash", {"command": COMMAND,
                                                  "description": "Check if env files are in git"})],
                         msg_id="m2"),
    ])
    return path, claude


def test_last_call_is_found_then_completed_by_its_result(engine: ContextEngine,
                                                          tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, claude = _claude_session(folder)
    first = engine.sync([str(folder)])
    assert first.full == 1 and first.bad_lines == 0
    pending = _holding(engine, COMMAND)
    assert len(pending) == 1 and pending[0].endswith("Result (pending)")
    hits = engine.recall(QUESTION, k=5).hits or ()
    assert any(COMMAND in h.text for h in hits)
    assert engine.sync([str(folder)]).unchanged == 1  # nothing new: nothing read or stored

    with path.open("a", encoding="utf-8") as fh:  # the result comes, then the answer
        fh.write(claude.tool_result("t2", "apps/app/.env.example") + "\n")
        fh.write(claude.assistant([text("Only the example file is tracked.")],
                                  msg_id="m3") + "\n")
    second = engine.sync([str(folder)])
    assert second.appended == 1 and second.bad_lines == 0
    done = _holding(engine, COMMAND)
    assert len(done) == 1 and done[0].endswith("Result: apps/app/.env.example")
    assert not _holding(engine, "Result (pending)")
    assert _stored(engine) == _one_shot(tmp_path, path)


def test_last_call_answered_by_a_new_request_instead(engine: ContextEngine,
                                                      tmp_path: Path) -> None:
    """The session was stopped mid-call, then resumed with a new request: the call is
    stored as one whose result never came, once, as a whole-file sync stores it."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, claude = _claude_session(folder)
    engine.sync([str(folder)])
    assert len(_holding(engine, COMMAND)) == 1
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude.user("never mind, read the README instead") + "\n")
        fh.write(claude.assistant([text("The README says to copy .env.example.")],
                                  msg_id="m3") + "\n")
    engine.sync([str(folder)])
    done = _holding(engine, COMMAND)
    assert len(done) == 1 and done[0].endswith("Result (none recorded)")
    assert _stored(engine) == _one_shot(tmp_path, path)


def test_more_appended_while_the_call_still_runs(engine: ContextEngine,
                                                 tmp_path: Path) -> None:
    """Bytes appended that leave the call pending (a progress line, a parallel call
    answered) store it again after the new chunks, never twice."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, claude = _claude_session(folder)
    engine.sync([str(folder)])
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude.assistant([tool_use("t3", "Bash", {"command": "git status --short"})],
                                  msg_id="m2") + "\n")
        fh.write(claude.tool_result("t3", " M README.md") + "\n")
    engine.sync([str(folder)])
    assert len(_holding(engine, COMMAND)) == 1
    assert _stored(engine) == _one_shot(tmp_path, path)
    ids = engine.rt.vault.chunk_ids()
    result = claude.tool_result("t2", "apps/app/.env.example")
    with path.open("a", encoding="utf-8") as fh:  # the result, cut mid-write
        fh.write(result[:40])
    assert engine.sync([str(folder)]).chunks == 0
    assert engine.rt.vault.chunk_ids() == ids  # no whole line: nothing written again
    with path.open("a", encoding="utf-8") as fh:
        fh.write(result[40:] + "\n")
    engine.sync([str(folder)])
    assert _stored(engine) == _one_shot(tmp_path, path)
    assert not _holding(engine, "Result (pending)")


def _codex(kind: str, payload: dict[str, object], second: int) -> str:
    return json.dumps({"timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "type": kind,
                       "payload": payload})


def _codex_call(call_id: str, command: str, second: int) -> str:
    return _codex("response_item", {"type": "function_call", "name": "exec_command",
                                    "arguments": json.dumps({"cmd": command}),
                                    "call_id": call_id}, second)


def _codex_output(call_id: str, out: str, second: int) -> str:
    return _codex("response_item", {"type": "function_call_output", "call_id": call_id,
                                    "output": out}, second)


def test_codex_last_call_is_found_then_completed(engine: ContextEngine,
                                                 tmp_path: Path) -> None:
    folder = tmp_path / "rollouts"
    folder.mkdir()
    path = write_lines(folder / "rollout-1.jsonl", [
        _codex("session_meta", {"id": "sess-c", "cwd": "/w/monorepo"}, 0),
        _codex("event_msg", {"type": "user_message",
                             "message": "audit the monorepo for secrets"}, 1),
        _codex("response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text",
                                              "text": "Checking what git tracks."}]}, 2),
        _codex_call("c1", COMMAND, 3),
    ])
    engine.sync([str(folder)])
    pending = _holding(engine, COMMAND)
    assert len(pending) == 1 and pending[0].endswith("Result (pending)")
    assert any(COMMAND in h.text for h in engine.recall(QUESTION, k=5).hits or ())
    with path.open("a", encoding="utf-8") as fh:
        fh.write(_codex_output("c1", "Process exited with code 0\nOutput:\n"
                                     "apps/app/.env.example", 4) + "\n")
    engine.sync([str(folder)])
    done = _holding(engine, COMMAND)
    assert len(done) == 1 and done[0].endswith("Result (exit 0): apps/app/.env.example")
    assert _stored(engine) == _one_shot(tmp_path, path)


def test_codex_running_command_shows_its_output_so_far(tmp_path: Path) -> None:
    """A unified-exec command still running where the rollout ends: its output so far."""
    path = write_lines(tmp_path / "rollout.jsonl", [
        _codex("session_meta", {"id": "sess-r", "cwd": "/w/proj"}, 0),
        _codex("event_msg", {"type": "user_message", "message": "run the dev server"}, 1),
        _codex_call("c1", "npm run dev", 2),
        _codex_output("c1", "Chunk ID: 1\nProcess running with session ID 7\nOutput:\n"
                            "ready on http://localhost:3000", 3),
    ])
    result = parse_codex(path)
    assert not [e for e in result.events if e.type == "tool_result"]
    [event] = result.pending
    assert (event.tool_use_id, event.error_kind, event.text, event.prompt) == (
        "c1", "pending", "ready on http://localhost:3000", "run the dev server")


def test_pending_calls_equal_whole_or_in_pieces(tmp_path: Path) -> None:
    """The real session of b3-043 ends with three calls whose result never came: a
    parse of its whole gives them as pending, and so does a parse resumed from the
    middle with the state passed through JSON."""
    source = shared_data("transcripts", "claude", "jnarowski__agentcmd__full-session-three.jsonl")
    whole = parse_any(source)
    assert [e.tool for e in whole.pending] == ["Bash", "Bash", "Read"]
    assert any("git ls-files | grep -E" in (e.tool_input or "") for e in whole.pending)
    data = source.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    work = tmp_path / source.name
    work.write_bytes(data[:cut])
    head = parse_any(work)
    work.write_bytes(data)
    tail = parse_any(work, start_offset=head.end_offset,
                     state=json.loads(json.dumps(head.state)))
    assert tail.pending == whole.pending
    start = len(chunks_of(head)) + len(chunks_of(tail))
    assert start == len(chunks_of(whole))


def test_completing_a_pending_call_keeps_what_recall_learned(data_dir: Path,
                                                              tmp_path: Path) -> None:
    """Dropping the pending calls' source (its call now stored for good) is no delete of
    a session: recall's learned reader stays, and no fit of every session is queued.
    The engine's delete of that source (it deletes the whole session) still drops it."""
    from tests.engine.flows.recall.test_recall_adapt import FIT, synced, write_sessions

    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(FIT, encoding="utf-8")
    folder = tmp_path / "sessions"
    write_sessions(folder, 12)
    path, claude = _claude_session(folder)
    with ContextEngine.open(data_dir) as eng:
        assert synced(eng, folder)
        fitted = adapt_rows.fitted_at(eng.rt.vault)
        assert fitted is not None and len(_holding(eng, "Result (pending)")) == 1
        with path.open("a", encoding="utf-8") as fh:
            fh.write(claude.tool_result("t2", "apps/app/.env.example") + "\n")
        assert synced(eng, folder) == ""
        assert not _holding(eng, "Result (pending)")
        assert adapt_rows.fitted_at(eng.rt.vault) == fitted
        with path.open("a", encoding="utf-8") as fh:  # pending again, then deleted alone
            fh.write(claude.assistant([tool_use("t9", "Bash", {"command": "ls"})],
                                      msg_id="m9") + "\n")
        synced(eng, folder)
        [pending] = [sid for sid, uri in eng.rt.vault._query("SELECT id, uri FROM sources")
                     if uri.endswith("#pending")]
        eng.delete(str(pending), wait=True)
        assert adapt_rows.fitted_at(eng.rt.vault) != fitted
