"""Recall against the real store: incremental sync, queries, and the auto context."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.facade import ContextEngine
from tests.conftest import shared_data

LARGE = "obra__episodic-memory__large-conversation.jsonl"


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    src = shared_data("transcripts")
    dst = tmp_path / "transcripts"
    shutil.copytree(src, dst)
    return dst


def _embedded(eng: ContextEngine) -> int:
    return eng._writer.embedded_texts


def test_sync_is_incremental(engine: ContextEngine, transcripts: Path) -> None:
    first = engine.sync([str(transcripts)])
    assert first.files == 21 and first.full == 21 and first.chunks > 1000
    assert not first.errors and first.bad_lines == 0
    chunks = engine.status().chunks

    again = engine.sync([str(transcripts)])
    assert again.unchanged == 21 and again.embedded == 0 and again.chunks == 0
    assert engine.status().chunks == chunks

    # Append one turn (a user line and an assistant answer) to the large file.
    path = transcripts / "claude" / LARGE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    user = next(ln for ln in lines if '"type":"user"' in ln and '"text"' in ln)
    assistant = next(ln for ln in reversed(lines) if '"type":"assistant"' in ln
                     and '"type":"text"' in ln)
    new_user = user.replace('"uuid":"', '"uuid":"x1', 1)
    new_assistant = assistant.replace('"uuid":"', '"uuid":"x2', 1).replace(
        '"id":"msg_', '"id":"msg_x2', 1)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(new_user)
        fh.write(new_assistant)
    before = _embedded(engine)
    grown = engine.sync([str(transcripts)])
    assert grown.appended == 1 and grown.unchanged == 20
    assert 1 <= grown.chunks <= 4
    assert _embedded(engine) - before <= grown.chunks
    assert engine.status().chunks == chunks + grown.chunks


def test_rewritten_file_is_read_again(engine: ContextEngine, transcripts: Path) -> None:
    engine.sync([str(transcripts)])
    chunks = engine.status().chunks
    path = transcripts / "claude" / "marot__spotter__short.jsonl"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"cwd":"', '"cwd":"/x', 1), encoding="utf-8")
    res = engine.sync([str(transcripts)])
    assert res.full == 1
    assert engine.status().chunks == chunks  # replaced, not duplicated


def test_recall_query_filters(engine: ContextEngine, transcripts: Path) -> None:
    engine.recall(index=[str(transcripts)])
    res = engine.recall("scroll not working in the terminal", k=5, project="spotter")
    assert res.hits and all(h.meta["project"] == "spotter" for h in res.hits)
    tools = engine.recall("error", k=10, types=["tool"])
    assert tools.hits and all(h.kind == "tool" for h in tools.hits)


@pytest.mark.parametrize("budget", [1, 40, 150, 600, 4000])  # 0 is invalid_budget
def test_auto_fits_budget_without_duplicates(engine: ContextEngine, transcripts: Path,
                                             budget: int) -> None:
    engine.sync([str(transcripts)])
    for project in ("spotter", "codemie-code", "agent-workflows-monorepo-v2"):
        out = engine.recall(auto=True, project=project, budget=budget, task="tests failing")
        assert out.total_tokens <= budget and out.context is not None
        assert engine.rt.counter.count(out.context) == out.total_tokens
        lines = [ln for ln in out.context.split("\n") if ln.strip()]
        assert len(lines) == len(set(lines))


def test_auto_failures_are_from_this_project(engine: ContextEngine, transcripts: Path) -> None:
    from engine.flows.recall.auto import failure_rows

    engine.sync([str(transcripts)])
    rows = failure_rows(engine.rt, "spotter")
    assert rows and all(r.project == "spotter" for r in rows)
    out = engine.recall(auto=True, project="spotter", budget=2000)
    assert out.context is not None
    fail_part = out.context.split("Failures to avoid:")[1]
    other = failure_rows(engine.rt, "codemie-code")
    assert other
    from engine.flows.recall.auto import failure_line

    assert not any(failure_line(r) in fail_part for r in other)
    assert any(failure_line(r) in fail_part for r in rows)


def test_claude_hook_format(engine: ContextEngine, transcripts: Path) -> None:
    import json

    engine.sync([str(transcripts)])
    out = engine.recall(auto=True, project="spotter", budget=500, fmt="claude-hook")
    hook = json.loads(out.output or "")
    assert hook["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert hook["hookSpecificOutput"]["additionalContext"] == out.context
