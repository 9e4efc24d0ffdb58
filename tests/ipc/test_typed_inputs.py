"""build_context takes its live items and conversation turns typed (``LiveItem``,
``ConversationTurn``, both public) or as mappings of the same fields, in process and over
the wire alike, with the same payload; and a status read over the wire carries the
serving process's counters as ``ServerStats`` (name -> count)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine import ContextEngine, ConversationTurn, LiveItem
from ipc.remote import RemoteEngine
from ipc.serve import ServerHost

NOW = 1_767_000_000.0
LIVE = [LiveItem(kind="terminal", source="zsh", title="zsh",
                 text="deploy failed: image tag not found", captured_at=NOW - 60)]
TURNS = [ConversationTurn(role="user", text="the deploy failed, how do I roll back?",
                          time=NOW - 30)]


def _fields(items: list[LiveItem] | list[ConversationTurn]) -> list[dict[str, object]]:
    return [dataclasses.asdict(i) for i in items]


def test_typed_live_items_and_turns_in_process_and_over_the_wire(data_dir: Path,
                                                                tmp_path: Path) -> None:
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Rollback\n\nA rollback uses the previous image tag.\n")
    with ContextEngine.open(data_dir) as engine:
        engine.wait(engine.ingest(paths=[str(docs)]))
        typed = engine.build_context("roll back the deploy", live=LIVE, conversation=TURNS,
                                     budget=400, now=NOW)
        plain = engine.build_context("roll back the deploy", live=_fields(LIVE),
                                     conversation=_fields(TURNS), budget=400, now=NOW)
        assert typed.context == plain.context and typed.items == plain.items
        assert {i.kind for i in typed.items} >= {"live:terminal", "conversation"}
        host = ServerHost(engine)
        try:
            with RemoteEngine(host.start(), timeout=10) as remote:
                served = remote.build_context("roll back the deploy", live=LIVE,
                                              conversation=TURNS, budget=400, now=NOW)
                status = remote.status()
        finally:
            host.stop(timeout=10)
    assert served.context == typed.context and served.items == typed.items
    assert status.server is not None and status.server["received"] >= 2
    assert all(isinstance(v, int) for v in status.server.values())
