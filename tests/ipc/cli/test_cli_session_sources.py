"""`ctx sources`, `ctx status`, `ctx delete` and MCP `sources` over the background engine
(real processes, the wire between): a coding session that two syncs stored is one
source, counted once, and a delete of the part a recall hit names removes all of it.
Before, each part was a row of its own and was deleted alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.engine.flows.recall.test_session_as_one import COMMAND, pending_session
from tests.engine.recall.recall_helpers import text
from tests.ipc.cli.test_cli import ctx


def _json(*args: str) -> dict:
    r = ctx(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_session_is_one_source_over_the_wire(tmp_path: Path) -> None:
    from ipc.mcp.link import EngineLink
    from ipc.mcp.server import CtxTools

    folder = tmp_path / "sessions"
    folder.mkdir()
    path, claude = pending_session(folder)
    _json("recall", "--index", str(folder))  # starts the background engine
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude.assistant([text("Still checking what git tracks.")], msg_id="m3")
                 + "\n")
    _json("recall", "--sync")
    [one] = _json("sources")["sources"]
    assert one["uri"] == f"transcript:{path}" and one["segments"] == 3
    assert _json("status")["status"]["sources"] == 1
    assert one["n_chunks"] == _json("status")["status"]["chunks"]
    table = ctx("sources")
    assert table.returncode == 0, table.stderr
    assert [line.split()[-1] for line in table.stdout.splitlines() if "transcript" in line] \
        == [f"transcript:{path}"]
    link = EngineLink(os.environ["CTX_HOME"])
    try:
        listed = CtxTools(link, 1500).sources()
    finally:
        link.close()
    assert listed.splitlines()[0].startswith("1 sources") and listed.count("transcript:") == 1
    assert "chunks from 3 syncs" in listed

    hits = _json("recall", COMMAND, "-k", "10")["hits"]
    part = next(h["source"] for h in hits if COMMAND in h["text"])
    assert part == f"transcript:{path}#pending"  # a hit names one part
    gone = _json("delete", part)
    assert gone["deleted"] == 1 and len(gone["sources"]) == 3
    assert _json("sources")["sources"] == []
    assert _json("status")["status"]["chunks"] == 0
