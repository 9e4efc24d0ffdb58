"""Agents hear what failed and what to do (issue 21): the SessionStart hook with a wrong
passphrase and no engine, the engine log read back, and the MCP server's identity,
argument checks, error hints and hits that name a path and lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import WrongKey
from engine.facade import ContextEngine
from ipc.autostart import engine_log_path, last_engine_error
from ipc.serve import ServerHost
from tests.agents.engines import REPO, ctx


def _hook(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    event = {"session_id": "t", "hook_event_name": "SessionStart", "cwd": str(cwd)}
    r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "hook", "session-start"],
                       input=json.dumps(event), capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def test_hook_with_a_wrong_passphrase_and_no_engine_says_wrong_key(tmp_path: Path) -> None:
    """With the hook's real deadline: it says what failed, not that an engine started.

    The store's key is wrapped at four times the default cost (scrypt n=2^17), so an
    engine started for it does not fail on the key before the hook must answer: only a
    hook that checks the key itself can say why."""
    r = ctx("--local", "ingest", "-", stdin="a note about ferries",
            env={"CTX__KEYS__SCRYPT_N": str(2**17)})
    assert r.returncode == 0, r.stderr
    env = {k: v for k, v in os.environ.items() if k != "CTX_HOOK_DEADLINE_S"}
    env.update(PYTHONPATH=str(REPO), CTX_PASSPHRASE="not the passphrase")
    for _ in range(2):  # and again: never "started" for an engine that cannot start
        out = _hook(env, tmp_path)
        msg = out["systemMessage"]
        assert "started its engine" not in msg and "is starting" not in msg, msg
        if "took too long" not in msg:  # the hook's own deadline on a loaded machine
            assert "does not open the store" in msg and "CTX_PASSPHRASE" in msg, msg
        assert out["hookSpecificOutput"]["additionalContext"] == ""


def test_the_last_engine_error_is_read_from_the_log(tmp_path: Path) -> None:
    log = engine_log_path(tmp_path)
    log.parent.mkdir()
    err = json.dumps({"error": WrongKey("wrong passphrase for this store").to_dict()})
    log.write_text(f"ctx: serving {tmp_path} at ipc://x (pid 1); stop it with Ctrl-C\n"
                   f"{err}\nctx: error [wrong_key]: wrong passphrase for this store\n")
    assert isinstance(last_engine_error(tmp_path), WrongKey)
    with log.open("a") as fh:  # an engine started after it: the error is history
        fh.write(f"ctx: serving {tmp_path} at ipc://y (pid 2); stop it with Ctrl-C\n")
    assert last_engine_error(tmp_path) is None


# -- MCP ----------------------------------------------------------------------------------------


def _mcp(requests: list[dict[str, Any]], last_id: int) -> list[dict[str, Any]]:
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "mcp"], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdin is not None and proc.stdout is not None
    messages: list[dict[str, Any]] = []
    try:
        for req in requests:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
        while not any(m.get("id") == last_id for m in messages):
            line = proc.stdout.readline()
            assert line, "ctx mcp closed stdout before answering"
            messages.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    return messages


def test_mcp_names_its_version_and_refuses_unknown_arguments() -> None:
    version = ctx("--version").stdout.split()[1]
    messages = _mcp([
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "ferry", "top_k": 3,
                                            "secret_flag": "hunter2"}}},
    ], last_id=3)
    by_id = {m.get("id"): m for m in messages}
    assert by_id[1]["result"]["serverInfo"]["version"] == version
    assert all(t["inputSchema"].get("additionalProperties") is False
               for t in by_id[2]["result"]["tools"])
    result = by_id[3]["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True
    assert "top_k" in text and "secret_flag" in text and "hunter2" not in text


def test_mcp_without_a_key_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from ipc.mcp.server import make_server

    ContextEngine.open().close()  # a store locked by the test passphrase
    monkeypatch.delenv("CTX_PASSPHRASE")
    server = make_server(None)
    try:
        with pytest.raises(ToolError) as info:
            server.ctx_tools.search("ferry")
    finally:
        server.ctx_tools.link.close()
    text = str(info.value)
    assert text.startswith("key_unavailable") and "CTX_PASSPHRASE" in text
    assert "ctx serve" in text  # the hook's hint


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    """A folder ingested into an engine served in this process (found as a live server)."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "retry.py").write_text(
        "import time\n\n\ndef retry(fn):\n    \"\"\"Retry uploads with exponential backoff."
        "\"\"\"\n    for i in range(3):\n        time.sleep(2 ** i)\n    return fn()\n")
    eng = ContextEngine.open()
    eng.wait(eng.ingest(paths=[str(root)]))
    host = ServerHost(eng)
    host.start()
    try:
        yield root
    finally:
        host.stop()
        eng.close()


def test_mcp_hits_name_path_lines_and_input_errors_their_field(served: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from ipc.mcp.server import make_server

    server = make_server(None)
    try:
        text = server.ctx_tools.search("retry uploads exponential backoff", budget=400)
        with pytest.raises(ToolError) as info:
            server.ctx_tools.search("   ")
    finally:
        server.ctx_tools.link.close()
    assert "pkg/retry.py:1-" in text and f"in {served}" in text
    assert str(info.value) == "empty_query: the query is empty (search.query)"
