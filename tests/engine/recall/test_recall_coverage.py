"""Every word stored: what the sessions said, line by line, is held by stored chunks.

The guard reads every real transcript under ../shared/data through a real sync
(the fake embedder: coverage is about stored text) and checks, per folder, that
some stored chunk of the same transcript holds 100% of the user's prompts and the
assistant's replies and at least 99% of tool inputs and tool results
(``engine.recall.coverage`` says what a line is and what is left out as the
harness's text). The smaller tests show what is stored now that was lost before:
the user's ``!`` commands and their output, an Edit's whole new text, a long
tool output whole, a long request whole, a call whose result never came.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.facade import ContextEngine
from engine.recall.claude import parse_claude
from engine.recall.codex import parse_codex
from engine.recall.config import RecallChunkConfig
from engine.recall.coverage import Coverage, Held, normalize, transcript_lines
from engine.recall.model import USER_SHELL
from tests.conftest import shared_data
from tests.engine.recall.recall_helpers import (
    ClaudeLines,
    chunks_of,
    parse_any,
    text,
    tool_use,
    write_lines,
)

FOLDERS = ("transcripts/claude", "transcripts/codex",
           "transcripts-public/claude", "transcripts-public/codex")
BANG = "entireio__cli__253fd5ef-38bf-4f4a-804a-98df5088a868.jsonl"  # has `!` commands


def _coverage(path: Path, texts: list[str]) -> Coverage:
    cov = Coverage()
    cov.add(transcript_lines(path), Held(texts))
    return cov


def test_every_shared_transcript_is_covered(engine: ContextEngine) -> None:
    shared = shared_data()
    folders = [shared / f for f in FOLDERS]
    for folder in folders:
        assert folder.is_dir(), f"shared transcripts missing: {folder}"
    res = engine.sync([str(f) for f in folders])
    assert res.files == sum(len(list(f.rglob("*.jsonl"))) for f in folders)
    assert not res.errors
    vault = engine.rt.vault
    texts: dict[str, list[str]] = {}
    for row in vault.chunks(vault.chunk_ids()).values():
        texts.setdefault(row.source.removeprefix("transcript:").rsplit("#", 1)[0],
                         []).append(row.text)
        assert row.tokens <= RecallChunkConfig().max_tokens
    for folder in folders:
        cov = Coverage()
        for path in sorted(folder.rglob("*.jsonl")):
            cov.add(transcript_lines(path), Held(texts.get(str(path.resolve()), [])))
        assert cov.said["prompt"] > 0 and cov.said["tool_result"] > 0, folder
        figures = {k: f"{cov.held[k]}/{cov.said[k]}" for k in cov.said}
        assert cov.share("prompt") == 1.0, (folder, figures)
        assert cov.share("reply") == 1.0, (folder, figures)
        assert cov.share("tool_input") >= 0.99, (folder, figures)
        assert cov.share("tool_result") >= 0.99, (folder, figures)


def test_the_check_bites_when_outputs_are_cut() -> None:
    """With only each call's own chunk (head and tail of its output, as before issue 31)
    the same transcript's tool results fall far short; the check is not trivial."""
    path = shared_data("transcripts-public", "claude", BANG)
    result = parse_any(path)
    cut = _coverage(path, [c.text for c in chunks_of(result,
                                                     cfg=RecallChunkConfig(max_tool_parts=0))])
    full = _coverage(path, [c.text for c in chunks_of(result)])
    assert cut.share("tool_result") < 0.5
    assert full.share("tool_result") >= 0.99
    assert full.share("prompt") == full.share("reply") == 1.0


def test_held_means_the_line_or_its_consecutive_pieces() -> None:
    held = Held(["User: why\nAssistant: the build   failed because\nthe flag was missing",
                 "Tool Bash (output): first half of a very long line that",
                 "Tool Bash (output, continued): goes on in the next chunk"])
    assert held.holds(normalize("the build failed because"))
    assert held.holds("the flag was missing")
    assert held.holds("first half of a very long line that goes on in the next chunk")
    assert not held.holds("the flag was present")
    assert not held.holds("first half of a very long line that goes elsewhere")


def test_users_own_shell_commands_and_output_are_stored() -> None:
    path = shared_data("transcripts-public", "claude", BANG)
    result = parse_claude(path)
    shell = [e for e in result.events if e.tool == USER_SHELL and e.type == "tool_result"]
    assert [json.loads(e.tool_input or "")["command"] for e in shell][:2] == [
        "git branch -v", "pwd"]
    assert shell[0].text.startswith("* main 706e2e3 Merge pull request #137")
    chunks = [c for c in chunks_of(result) if c.meta["tool"] == USER_SHELL]
    assert chunks[0].text.endswith(
        "Tool user shell: git branch -v\n"
        "Result: * main 706e2e3 Merge pull request #137 from entireio/update-security-email")
    assert not any("<bash-" in c.text for c in chunks_of(result))


def test_shell_command_without_output_is_kept(tmp_path: Path) -> None:
    claude = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [
        claude.user("<bash-input>make deploy-staging</bash-input>"),
        claude.user("<bash-input>git status</bash-input>"),
        claude.user("<bash-stdout>nothing to commit</bash-stdout><bash-stderr></bash-stderr>"),
    ])
    texts = [c.text for c in chunks_of(parse_claude(path))]
    assert texts == ["Tool user shell: make deploy-staging\nResult: (no output)",
                     "Tool user shell: git status\nResult: nothing to commit"]


def test_edit_new_text_and_long_output_are_stored_whole(tmp_path: Path) -> None:
    claude = ClaudeLines()
    new = "\n".join(f"    step_{i} = configure_stage({i}, retries={i % 3})" for i in range(120))
    output = "\n".join(f"PASS tests/unit/test_stage_{i}.py::test_case_{i}" for i in range(300))
    path = write_lines(tmp_path / "s.jsonl", [
        claude.user("refactor the pipeline stages"),
        claude.assistant([tool_use("t1", "Edit", {"file_path": "/w/pipe.py",
                                                  "old_string": "pass", "new_string": new})],
                         msg_id="m1"),
        claude.tool_result("t1", "The file /w/pipe.py has been updated."),
        claude.assistant([tool_use("t2", "Bash", {"command": "pytest -v"})], msg_id="m2"),
        claude.tool_result("t2", output),
        claude.assistant([text("All stages pass.")], msg_id="m3"),
    ])
    chunks = chunks_of(parse_claude(path))
    assert all(c.tokens <= RecallChunkConfig().max_tokens for c in chunks)
    held = Held([c.text for c in chunks])
    assert all(held.holds(normalize(line)) for line in new.splitlines())
    assert all(held.holds(normalize(line)) for line in output.splitlines())
    parts = [c for c in chunks if c.meta.get("part")]
    assert {c.meta["part"] for c in parts} == {"input", "output"}
    assert parts[0].text.startswith("Tool Edit (input): /w/pipe.py\n")
    # the call's own chunk is as before: a summary, the output's head and tail
    call = next(c for c in chunks if c.meta["key"].endswith(":tool:t2"))
    assert call.text.startswith("User: refactor the pipeline stages\nTool Bash: pytest -v\n")
    cov = _coverage(path, [c.text for c in chunks])
    assert all(cov.share(k) == 1.0 for k in ("prompt", "reply", "tool_input", "tool_result"))


def test_long_request_is_stored_whole(tmp_path: Path) -> None:
    claude = ClaudeLines()
    request = "\n".join(f"- requirement {i}: the exporter must handle case {i} gracefully"
                        for i in range(60))
    path = write_lines(tmp_path / "s.jsonl", [
        claude.user(request),
        claude.assistant([text("Done: every case is handled.")], msg_id="m1"),
    ])
    chunks = chunks_of(parse_claude(path))
    held = Held([c.text for c in chunks])
    assert all(held.holds(normalize(line)) for line in request.splitlines())
    assert chunks[0].text.startswith("User (request): - requirement 0:")
    assert chunks[0].meta["part"] == "request" and chunks[0].kind == "turn_pair"


def test_call_whose_result_never_came_is_stored(tmp_path: Path) -> None:
    claude = ClaudeLines()
    path = write_lines(tmp_path / "s.jsonl", [
        claude.user("check the env files"),
        claude.assistant([tool_use("t1", "Bash", {"command": "git ls-files | grep .env"})],
                         msg_id="m1"),
        claude.user("never mind, look at the README instead"),
        claude.assistant([text("The README says to copy .env.example.")], msg_id="m2"),
    ])
    chunks = chunks_of(parse_claude(path))
    call = next(c for c in chunks if c.kind == "tool")
    assert call.text == ("User: check the env files\nTool Bash: git ls-files | grep .env\n"
                         "Result (none recorded)")
    assert call.meta["error_kind"] == "no_result" and call.meta["failure"] is False


def test_parts_change_nothing_the_auto_digest_counts(engine: ContextEngine,
                                                      tmp_path: Path) -> None:
    """A long request and a failed call's long output are stored whole, in parts; the
    session still has one turn, one failure, and its first request reads as typed."""
    from engine.flows.recall.auto import failure_rows, recent_sessions
    from engine.recall.present import TurnChunk, turn_outcome

    claude = ClaudeLines(cwd="/home/u/src/partsdemo")
    request = "\n".join(f"the importer fails on row kind {i}, please look" for i in range(40))
    log = "\n".join(f"FAIL tests/test_import.py::test_row_{i} - KeyError: 'kind{i}'"
                    for i in range(200))
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_lines(folder / "s.jsonl", [
        claude.user(request),
        claude.assistant([tool_use("t1", "Bash", {"command": "pytest tests/test_import.py"})],
                         msg_id="m1"),
        claude.tool_result("t1", "Exit code 1\n" + log, is_error=True),
        claude.assistant([text("The importer needs a default for unknown kinds.")],
                         msg_id="m2"),
    ])
    engine.sync([str(folder)])
    vault = engine.rt.vault
    rows = list(vault.chunks(vault.chunk_ids()).values())
    assert {r.meta.get("part") for r in rows} == {None, "request", "output"}
    assert len(failure_rows(engine.rt, "partsdemo")) == 1
    (session,) = recent_sessions(engine.rt, "partsdemo", None, 5)
    assert session["turns"] == 1 and session["failures"] == 1
    assert session["request"].startswith("the importer fails on row kind 0")
    ordered = sorted(rows, key=lambda r: r.ordinal)
    outcome = turn_outcome([TurnChunk(r.kind, bool(r.meta["failure"]), r.meta["error_kind"],
                                      r.meta["tool"], r.text) for r in ordered])
    assert outcome == ("1 failed (nonzero_exit, Bash); "
                       "ended: The importer needs a default for unknown kinds.")


def test_codex_users_own_shell_command_is_stored(tmp_path: Path) -> None:
    def line(kind: str, payload: dict[str, object], second: int) -> str:
        return json.dumps({"timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "type": kind,
                           "payload": payload})

    fragment = ("<user_shell_command>\n\n<command>\ngit log --oneline -2\n</command>\n"
                "<result>\nExit code: 0\nDuration: 0.0125 seconds\nOutput:\n"
                "a1b2c3d Fix the importer\n9f8e7d6 Add the exporter\n</result>\n\n"
                "</user_shell_command>")
    path = write_lines(tmp_path / "rollout.jsonl", [
        line("session_meta", {"id": "sess-c", "cwd": "/w/proj"}, 0),
        line("event_msg", {"type": "user_message", "message": "what changed lately?"}, 1),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": fragment}]}, 2),
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text",
                                            "text": "Two commits: an importer fix, an exporter."}]},
             3),
    ])
    result = parse_codex(path)
    chunks = chunks_of(result)
    shell = [c for c in chunks if c.meta["tool"] == USER_SHELL]
    assert [c.text for c in shell] == [
        ("User: what changed lately?\nTool user shell: git log --oneline -2\n"
         "Result (exit 0): a1b2c3d Fix the importer\n9f8e7d6 Add the exporter")]
    assert not any("user_shell_command" in c.text for c in chunks)  # never read as a request
    cov = _coverage(path, [c.text for c in chunks])
    assert cov.said["tool_input"] == 1 and cov.said["tool_result"] == 2
    assert all(cov.share(k) == 1.0 for k in ("prompt", "reply", "tool_input", "tool_result"))
