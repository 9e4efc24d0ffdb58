"""Stores for the backup tests: documents, conversations and a coding-session transcript,
the state of a store to compare, and `ctx` run as a new process with a fresh HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines

REPO = Path(__file__).resolve().parents[4]
NOW = 1_790_000_000.0  # a fixed "now": build_context's recency is the same in every store
QUERIES = ("when does the harbour flood at high tide", "what did Maya say about the boat",
           "why did the pytest run fail on the parser", "lighthouse keeper rota",
           "rope knots for mooring")

TOPICS = ("harbour", "tide", "lighthouse", "rope", "mooring", "sail", "anchor", "buoy")


def write_docs(folder: Path, n: int, tag: str = "doc") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
        body = "\n\n".join(
            f"The {a} log {i}.{j} notes how the {b} behaved at {6 + j}:00, with the crew's "
            f"remarks on the {a} and the weather over the {b}." for j in range(5))
        (folder / f"{tag}{i:03d}.md").write_text(f"# {tag} {i}: {a} and {b}\n\n{body}\n")
        os.utime(folder / f"{tag}{i:03d}.md", (NOW - 86400 * i, NOW - 86400 * i))
    return folder


def write_transcript(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ClaudeLines(session="sess-backup", cwd="/home/u/src/parser", branch="main")
    write_lines(folder / "sess-backup.jsonl", [
        lines.user("the parser test fails, can you look?"),
        lines.assistant([text("I will run pytest on the parser."),
                         tool_use("c1", "Bash", {"command": "pytest tests/test_parser.py"})]),
        lines.tool_result("c1", "FAILED tests/test_parser.py::test_quotes - KeyError: 'end'",
                          is_error=True),
        lines.assistant([text("The pytest run failed on the parser: the tokenizer drops the "
                              "closing quote, so 'end' is never set. Fixing the tokenizer.")]),
        lines.user("great, thanks"),
    ])
    return folder


CONVERSATIONS = [
    ("Boat chat", [{"speaker": "Maya", "text": "The boat needs new rope before the race."},
                   {"speaker": "Ola", "text": "I will buy mooring lines at the harbour."},
                   {"speaker": "Maya", "text": "Get the blue ones, they float."}]),
    ("Keeper rota", [{"speaker": "Ola", "text": "Who keeps the lighthouse on Sunday?"},
                     {"speaker": "Ben", "text": "The lighthouse keeper rota says Maya."}]),
]


def fill(eng: Any, tmp: Path, docs: int = 24) -> None:
    """Documents, conversations and a transcript, all stored and ready."""
    eng.wait(eng.ingest(paths=[str(write_docs(tmp / "docs", docs))]))
    for i, (title, turns) in enumerate(CONVERSATIONS):
        eng.ingest_conversation(turns, title=title, session_time=NOW - 3600 * (i + 1),
                                wait=True)
    eng.sync(paths=[str(write_transcript(tmp / "sessions"))])


def state(eng: Any) -> dict[str, Any]:
    """What must be the same after a restore: the sources, and build_context's payloads
    (without their timings), as JSON."""
    sources = sorted((s.uri, s.kind, s.title, s.content_hash, s.n_chunks, s.tokens, s.project,
                      s.created_at, s.ingested_at) for s in eng.sources())
    payloads = []
    for q in QUERIES:
        p = eng.build_context(q, budget=600, now=NOW).to_dict()
        p.pop("timings")
        payloads.append(json.dumps(p, sort_keys=True))
    return {"sources": sources, "payloads": payloads}


def fresh_env(home: Path, **extra: str) -> dict[str, str]:
    """A new machine, as far as ctx can tell: HOME, XDG dirs and data dir all new, no key
    in the environment, no keychain."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CTX_PASSPHRASE", "CTX_KEY_FILE", "CTX_RECOVERY_KEY", "XDG_"))}
    for name in ("config", "data", "cache", "state", "run"):
        (home / name).mkdir(parents=True, exist_ok=True, mode=0o700)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"),
               XDG_STATE_HOME=str(home / "state"), XDG_RUNTIME_DIR=str(home / "run"),
               CTX_HOME=str(home / "data" / "ctx"), PYTHONPATH=str(REPO),
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", **extra)
    return env


def ctx(args: list[str], env: dict[str, str], stdin: str = "",
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout,
                          check=False)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes (what "nothing written" compares)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}
