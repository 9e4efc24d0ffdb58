"""`make lint`'s type checker sees the engine's typed face: a deliberate misuse of a typed
result fails it (the release smoke test and the README's example once read the typed
``Payload`` as a dict, and nothing noticed), and the same code written right passes, with
build_context's inputs typed (LiveItem, ConversationTurn) and the server's counters ints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WRONG = '''from engine import ContextEngine


def tokens(engine: ContextEngine) -> int:
    payload = engine.build_context("what changed?", budget=200)
    return payload["total_tokens"]
'''


# Written right, and typed: build_context's live items and turns as the public types, and
# the server's counters on a status read as ints (ServerStats).
TYPED = '''

from engine import ConversationTurn, LiveItem, Status


def typed(engine: ContextEngine, status: Status) -> int:
    payload = engine.build_context("q", live=[LiveItem("terminal", "zsh", "zsh", "x")],
                                   conversation=[ConversationTurn("user", "hi")])
    received: int = (status.server or {}).get("received", 0)
    return payload.total_tokens + received
'''


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "snippet.py"
    module.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                           "--cache-dir", str(tmp_path / "cache"), str(module)], cwd=REPO,
                          capture_output=True, text=True, timeout=500, check=False)


def test_a_typed_result_read_as_a_dict_fails_the_check(tmp_path: Path) -> None:
    wrong = _mypy(tmp_path, WRONG)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Value of type "Payload" is not indexable' in wrong.stdout
    right = _mypy(tmp_path, WRONG.replace('payload["total_tokens"]', "payload.total_tokens")
                  + TYPED)
    assert right.returncode == 0, right.stdout + right.stderr
