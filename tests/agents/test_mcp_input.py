"""`ctx mcp` answers every line (issue 32): text that is not JSON gets JSON-RPC's
-32700 Parse error, JSON that is not a message -32600, both with id null; arguments
that fail a tool's schema name each argument, without pydantic's URL; a budget is
1..200,000 tokens as everywhere else (docs/wire.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.agents.engines import REPO

_INIT = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t",
                                                                        "version": "0"}}},
         {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def _mcp(lines: list[str], replies: int) -> list[dict[str, Any]]:
    """Write ``lines`` to a real `ctx mcp`, read ``replies`` replies."""
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "mcp"], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdin is not None and proc.stdout is not None
    out: list[dict[str, Any]] = []
    try:
        for line in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        while len(out) < replies:
            line = proc.stdout.readline()
            assert line, f"ctx mcp closed stdout after {out}"
            out.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    return out


def test_a_line_that_is_not_json_gets_a_parse_error() -> None:
    init = [json.dumps(m) for m in _INIT]
    out = _mcp(["this is not json", "[1, 2]", *init,
                json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})], replies=4)
    assert out[0] == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": out[0]["error"]["message"]}}
    assert out[0]["error"]["message"].startswith("Parse error")
    assert out[1]["id"] is None and out[1]["error"]["code"] == -32600
    assert out[2]["id"] == 1 and out[3]["id"] == 2  # and the session goes on


def test_argument_errors_name_the_argument_without_a_url() -> None:
    calls = [{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                 "name": "search", "arguments": {"query": "ferry", "budget": "lots"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                 "name": "recall", "arguments": {"query": "ferry", "budget": 0}}}]
    out = _mcp([json.dumps(m) for m in [*_INIT, *calls]], replies=3)
    by_id = {m["id"]: m for m in out}
    for i, arg in ((2, "budget"), (3, "budget")):
        result = by_id[i]["result"]
        text = result["content"][0]["text"]
        assert result["isError"] is True
        assert f"{arg}:" in text and "http" not in text and "pydantic" not in text, text
        assert "validation error for" not in text and "lots" not in text, text
    assert "greater than or equal to 1" in by_id[3]["result"]["content"][0]["text"]
