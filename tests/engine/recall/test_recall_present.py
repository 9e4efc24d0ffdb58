"""What an agent sees of a recall hit (issue 26): one line placing it (session, date,
branch, what came of its turn) and the excerpt that answers, within its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.facade import ContextEngine
from engine.recall.present import TurnChunk, excerpt, hit_line, turn_outcome
from engine.tokens import TokenCounter
from tests.conftest import shared_data


def test_turn_outcome_names_failures_and_how_the_turn_ended() -> None:
    turn = [TurnChunk("tool", True, "nonzero_exit", "Bash", "Tool Bash: make\nResult (exit 2)"),
            TurnChunk("turn_pair", False, None, None,
                      "User: build it\nAssistant: Fixed the missing import; the build passes.")]
    assert turn_outcome(turn) == ("1 failed (nonzero_exit, Bash); "
                                  "ended: Fixed the missing import; the build passes.")
    assert turn_outcome([TurnChunk("turn_pair", True, "interrupted", None,
                                   "User: go\nAssistant: [interrupted by the user]")]) == (
        "1 failed (interrupted); [interrupted by the user]")
    assert turn_outcome([]) == "no reply recorded"


def test_hit_line_is_one_line() -> None:
    line = hit_line({"session": "0c97beba-bfcb-4f84", "branch": "main", "failure": True},
                    1770192000.0, "1 failed (nonzero_exit, Bash)")
    assert line == "0c97beba · 2026-02-04 08:00 · main · FAILED · 1 failed (nonzero_exit, Bash)"
    assert "\n" not in line


def test_excerpt_keeps_the_request_and_the_lines_that_answer() -> None:
    counter = TokenCounter.shared()
    filler = [f"Step {i}: looked at unrelated file number {i} in the repository." for i in range(40)]
    text = "\n".join(["User: why does resume complain about local changes? " + "x " * 60,
                      *filler[:20],
                      "The bug: go-git ignores the global gitignore, so resume sees changes.",
                      *filler[20:]])
    out = excerpt(text, "why does resume see local changes with a global gitignore",
                  counter, 80)
    assert counter.count(out) <= 80
    assert out.startswith("User: why does resume complain about local changes?")
    assert "go-git ignores the global gitignore" in out
    assert excerpt("short", "q", counter, 80) == "short"


@pytest.mark.parametrize("budget", [16, 40, 200])
def test_excerpt_never_exceeds_its_budget(budget: int) -> None:
    counter = TokenCounter.shared()
    text = "User: q\n" + "\n".join("word " * 200 for _ in range(3))
    assert counter.count(excerpt(text, "word", counter, budget)) <= budget


def test_recall_hits_keep_their_keys_and_gain_line_and_excerpt(engine: ContextEngine,
                                                                tmp_path: Path) -> None:
    engine.sync([str(shared_data("transcripts"))])
    hits = engine.recall("why did the tests fail", k=5).hits
    assert hits
    for h in hits:
        assert {"chunk_id", "source_id", "source", "title", "kind", "text", "score", "lanes",
                "meta", "line", "excerpt"} <= set(h.to_dict())
        assert h.line.startswith(h.meta["session"][:8] + " · ")
        assert "\n" not in h.line
        assert engine.rt.counter.count(h.excerpt) <= engine.rt.cfg.recall.hit_excerpt_tokens
    failed = engine.recall("failed", k=20, types=["tool"]).hits or ()
    assert any("failed (" in h.line for h in failed)


def test_work_before_the_first_request_has_an_outcome(engine: ContextEngine,
                                                       tmp_path: Path) -> None:
    """A session file that starts mid-task (its first lines are the agent at work, no
    request yet): those chunks have no turn number, and their line says what came of
    that work like any turn's, not "outcome unknown"."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    name = "obra__episodic-memory__large-conversation.jsonl"  # begins with the agent's reply
    (folder / name).write_bytes(shared_data("transcripts", "claude", name).read_bytes())
    engine.sync([str(folder)])
    hits = engine.recall("update gitignore to allow the Prisma files", k=30).hits or ()
    early = [h for h in hits if h.meta.get("turn") is None]
    assert early  # the work before the first request is found
    for h in early:
        assert "outcome unknown" not in h.line and "ended: " in h.line, h.line
    assert all("outcome unknown" not in h.line for h in hits)


def test_auto_failures_follow_the_task(engine: ContextEngine) -> None:
    engine.sync([str(shared_data("transcripts"))])
    task = "lefthook pre-commit blocked the prisma commit"
    out = engine.recall(auto=True, project="example-project", budget=3000, task=task)
    fails = (out.context or "").split("Failures to avoid:")[1].strip().split("\n")
    without = engine.recall(auto=True, project="example-project", budget=3000)
    assert fails[0] != (without.context or "").split("Failures to avoid:")[1].strip().split("\n")[0]
    assert "lefthook" in fails[0].lower() or "commit" in fails[0].lower()


def test_a_long_call_line_does_not_keep_its_result_out_of_the_excerpt() -> None:
    """An Edit's input summed up in one long line: the excerpt shows its start and the
    result after it (the answer to "why was my edit refused?"), not the input alone."""
    counter = TokenCounter.shared()
    edit = "Tool Edit: src/config.go; old_string=" + "data, err := read(path) " * 30
    result = ("Result (refused by the harness): Found 2 matches of the string to replace, "
              "but replace_all is false.")
    text = (f"User: fix the double wrapping of the settings error\nAssistant: I will fix "
            f"the error wrapping in config.go by removing the prefix.\n{edit}\n{result}")
    out = excerpt(text, "why was my edit of the config error wrapping refused?", counter, 150)
    assert counter.count(out) <= 150
    assert "Tool Edit: src/config.go" in out
    assert "Found 2 matches" in out


def test_room_left_shows_the_start_of_the_next_line() -> None:
    """Whole lines first; what room is left shows the next line's start, cut."""
    counter = TokenCounter.shared()
    text = "\n".join(["The cache key is the file's hash and its size.",
                      "zanzibar " * 100])
    out = excerpt(text, "what is the cache key", counter, 60)
    assert out.startswith("The cache key is the file's hash")
    assert "zanzibar" in out and out.endswith("…")
    assert counter.count(out) <= 60


def test_a_request_that_answers_is_quoted_at_length() -> None:
    """When the request holds more of the question's words than any line below it (the
    question asks what was asked for), the excerpt quotes it past ``request_tokens``."""
    counter = TokenCounter.shared()
    request = ("User: Alright, now that the redaction of secrets in transcripts works and "
               "its package is reviewed, for every test in it I would like to see "
               "literal expectations, either byte slices or strings, instead of "
               "strings.Contains checks, so the tests are easier to understand.")
    reply = "\n".join(f"Assistant: step {i} of the edit went through without trouble."
                      if i != 17 else "Assistant: then the helper was renamed to wantBytes."
                      for i in range(30))
    text = f"{request}\n{reply}"
    asked = "how did I want the tests to check: byte slices or strings instead of Contains?"
    out = excerpt(text, asked, counter, 120)
    assert "instead of strings.Contains checks" in out
    assert counter.count(out) <= 120
    # a question the reply answers keeps the request short
    out = excerpt(text, "what was the test helper renamed to?", counter, 120)
    assert "literal expectations" not in out
    assert "renamed to wantBytes" in out
