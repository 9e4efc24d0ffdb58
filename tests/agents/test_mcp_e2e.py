"""`ctx mcp` with a real MCP client (the SDK's stdio client) calling every tool.

The server is the real `ctx mcp` process; no engine runs at first, so the
first call starts one in the background. Every tool answers, payloads stay
within the budget asked, and stdout carries JSON-RPC only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.agents.engines import REPO, ctx
from tests.conftest import shared_data

ENV_KEYS = ("CTX_HOME", "CTX_PASSPHRASE", "CTX_EMBEDDER", "CTX__KEYS__SCRYPT_N",
            "CTX_RUNTIME_DIR", "XDG_RUNTIME_DIR", "CTX_ENGINE_IDLE_S", "HOME",
            "PYTHON_KEYRING_BACKEND", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
            "ANONYMIZED_TELEMETRY")


def _server_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
    env["PYTHONPATH"] = str(REPO)
    return env


def _tokens(text: str) -> int:
    from engine.tokens import TokenCounter

    return TokenCounter.shared().count(text)


async def _session_calls(calls: list[tuple[str, dict[str, Any]]]
                         ) -> tuple[list[Any], list[tuple[str, Any]]]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "ipc.cli.main", "mcp"],
                                   env=_server_env(), cwd=str(REPO))
    results = []
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - a pipe sink, opened once
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            for name, args in calls:
                results.append((name, await session.call_tool(name, args)))
    return tools, results


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "retry.md").write_text("# Retry policy\n\nUploads are retried three times with "
                                   "exponential backoff starting at 200 ms.\n" * 20)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for f in sorted(shared_data("transcripts", "claude").glob("*.jsonl"))[:6]:
        shutil.copy(f, sessions / f.name)
    r = ctx("recall", "--index", str(sessions), "--json")  # starts the background engine
    assert r.returncode == 0, r.stderr
    return docs


def test_every_tool_over_stdio(corpus: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("ingest", {"path": str(corpus)}),
        ("ingest", {"text": "We decided to pin the ferry schedule API to v2.", "title": "pin"}),
        ("search", {"query": "exponential backoff for uploads", "budget": 120}),
        ("build_context", {"query": "how are failed uploads retried?", "budget": 150}),
        ("recall", {"query": "tests failed", "budget": 200, "k": 10}),
        ("recall", {"auto": True, "project": "spotter", "budget": 300}),
        ("sources", {"budget": 100}),
        ("search", {"query": "which API version did we pin the ferry schedule to"}),
        ("ingest", {"path": "relative/path"}),
        ("recall", {}),
    ]
    tools, results = anyio.run(_session_calls, calls)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"build_context", "search", "recall", "sources", "ingest"}
    for tool in tools:
        assert tool.description and len(tool.description) > 40
        props = tool.input_schema["properties"]
        assert all(p.get("description") for p in props.values()), tool.name
    assert by_name["build_context"].input_schema["required"] == ["query"]

    texts = [(name, res.is_error, res.content[0].text) for name, res in results]
    for (name, args), (_, is_error, text) in zip(calls[:8], texts[:8]):
        assert not is_error, (name, text)
        assert text.strip(), name
        if "budget" in args:
            assert _tokens(text) <= args["budget"], (name, _tokens(text))
    assert texts[0][2].startswith("done:") and texts[1][2].startswith("done:")
    assert "backoff" in texts[2][2] and "backoff" in texts[3][2]
    assert "[" in texts[4][2]  # ranked session hits
    assert "more hits did not fit in 200 tokens" in texts[4][2]  # the engine sized them
    assert "pin" in texts[7][2]  # what the agent ingested is found
    assert texts[8][1] and "absolute" in texts[8][2]  # errors are tool errors, not crashes
    assert texts[9][1] and "auto" in texts[9][2]


def test_stdout_is_protocol_only() -> None:
    """Raw JSON-RPC over the pipes: every stdout line is a JSON-RPC message."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "sources", "arguments": {"budget": 60}}},
    ]
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
        while not any(m.get("id") == 3 for m in messages):
            line = proc.stdout.readline()
            assert line, "ctx mcp closed stdout before answering"
            messages.append(json.loads(line))  # anything but JSON-RPC would fail here
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert {1, 2, 3} <= {m.get("id") for m in messages}
    (call,) = [m for m in messages if m.get("id") == 3]
    assert _tokens(call["result"]["content"][0]["text"]) <= 60
