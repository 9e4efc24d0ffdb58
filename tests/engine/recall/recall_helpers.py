"""Shared helpers of the recall tests: where the real transcripts are, and a
small writer of synthetic Claude Code / Codex lines for edge cases."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from engine.recall.chunks import transcript_chunks
from engine.recall.claude import parse_claude
from engine.recall.codex import parse_codex
from engine.recall.config import PrivacyConfig, RecallChunkConfig
from engine.recall.model import ParseResult, detect_agent
from engine.recall.privacy import apply_privacy
from engine.tokens import TokenCounter
from engine.types import ChunkDraft

# Real transcripts (see shared/data/transcripts/SOURCES.md for provenance).
TRANSCRIPTS = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "transcripts"


def transcript(name: str) -> Path:
    """``<agent>/<file>`` under the shared transcripts, or skip the test."""
    path = TRANSCRIPTS / name
    if not path.is_file():
        pytest.skip(f"shared transcript data not present: {name}")
    return path


def parse_any(path: Path, **kwargs: Any) -> ParseResult:
    agent = detect_agent(path)
    assert agent in ("claude", "codex"), path
    parser = parse_claude if agent == "claude" else parse_codex
    return parser(path, **kwargs)


def chunks_of(result: ParseResult, *, start_ordinal: int = 0,
              cfg: RecallChunkConfig | None = None,
              privacy: PrivacyConfig | None = None) -> list[ChunkDraft]:
    """The product pipeline: privacy first, then chunk extraction."""
    cleaned = apply_privacy(result, privacy or PrivacyConfig())
    return transcript_chunks(cleaned, cfg or RecallChunkConfig(), TokenCounter.shared(),
                             start_ordinal=start_ordinal)


@functools.lru_cache(maxsize=64)
def whole(name: str) -> tuple[ParseResult, tuple[ChunkDraft, ...]]:
    """A shared transcript parsed and chunked whole (cached: several tests use it)."""
    result = parse_any(transcript(name))
    return result, tuple(chunks_of(result))


class ClaudeLines:
    """Builds Claude Code JSONL lines with consistent envelopes."""

    def __init__(self, session: str = "sess-1", cwd: str = "/home/u/src/demo",
                 branch: str = "main") -> None:
        self.session, self.cwd, self.branch = session, cwd, branch
        self.n = 0

    def _envelope(self, kind: str, uuid: str | None, **extra: Any) -> dict[str, Any]:
        self.n += 1
        line = {"parentUuid": None, "isSidechain": False, "userType": "external",
                "cwd": self.cwd, "sessionId": self.session, "version": "2.0.0",
                "gitBranch": self.branch, "type": kind, "uuid": uuid or f"u-{self.n:04d}",
                "timestamp": f"2025-10-01T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"}
        line.update(extra)
        return line

    def user(self, content: Any, uuid: str | None = None, **extra: Any) -> str:
        return json.dumps(self._envelope("user", uuid, message={"role": "user",
                                                                "content": content}, **extra))

    def assistant(self, blocks: list[dict[str, Any]], msg_id: str = "msg_1",
                  uuid: str | None = None, model: str = "claude-test-1") -> str:
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                   "content": blocks, "stop_reason": None}
        return json.dumps(self._envelope("assistant", uuid, message=message))

    def tool_result(self, tool_use_id: str, content: Any, is_error: bool = False,
                    extra_result: Any = None, uuid: str | None = None) -> str:
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content,
                 "is_error": is_error}
        extra = {"toolUseResult": extra_result} if extra_result is not None else {}
        return self.user([block], uuid=uuid, **extra)

    @staticmethod
    def summary(text: str, leaf: str) -> str:
        return json.dumps({"type": "summary", "summary": text, "leafUuid": leaf})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def call_lines(claude: ClaudeLines, call_id: str, tool: str, tool_input: dict[str, Any],
               output: str, msg_id: str) -> list[str]:
    """A tool call and its result, as a transcript holds them."""
    return [claude.assistant([tool_use(call_id, tool, tool_input)], msg_id=msg_id),
            claude.tool_result(call_id, output)]


def synced(engine: Any, tmp_path: Path, lines: list[str]) -> Path:
    """``lines`` as the session file ``sessions/s.jsonl`` under ``tmp_path``, synced."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_lines(folder / "s.jsonl", lines)
    engine.sync([str(folder)])
    return folder
