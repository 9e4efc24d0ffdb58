"""docs/wire.md, the server and the engine are one truth about limits and error codes.

The doc's parameter tables, limits table and error table are read and compared
with ipc.wire's schemas and constants and with the engine's own defaults;
then a real server (real sockets) is asked at each limit and one past it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import ipc.errors  # noqa: F401 - registers the wire errors with all_error_classes
from engine import LIMITS as CALLER_LIMITS
from engine.errors import CtxError, all_error_classes, error_from_dict
from engine.flows.search.inputs import (
    check_budget,
    check_conversation,
    check_live,
    check_query,
)
from engine.retrieval.config import SearchConfig
from engine.types import LIVE_KINDS
from ipc import wire
from ipc.client import Client
from ipc.wire import METHODS, IpcConfig
from tests.ipc.conftest import RawPeer
from tests.ipc.processes import REPO
from tests.ipc.wire_doc_tables import (
    error_rows,
    field_rows,
    limit_rows,
    param_rows,
    render,
)

DOC = (REPO / "docs" / "wire.md").read_text(encoding="utf-8")
LIMITS = limit_rows(DOC)


def _count(name: str) -> int:
    """A limit of the doc's table that counts something (a whole number)."""
    value = LIMITS[name]
    assert isinstance(value, int), name
    return value


def test_every_parameter_row_is_what_the_server_checks() -> None:
    rows = param_rows(DOC)
    expected = {(m, n): render(f) for m, spec in METHODS.items() for n, f in spec.params.items()}
    assert set(rows) == set(expected)
    for key, text in expected.items():
        assert rows[key] == text, key


def test_live_item_and_turn_tables_are_the_schemas() -> None:
    live = METHODS["build_context"].params["live"].items
    turn = METHODS["build_context"].params["conversation"].items
    assert live is not None and turn is not None and not live.extra
    assert field_rows(DOC, "| live item field |") == {
        n: render(f) for n, f in (live.fields or {}).items()}
    assert field_rows(DOC, "| turn field |") == {n: render(f) for n, f in (turn.fields or {}).items()}
    assert (live.fields or {})["kind"].choices == LIVE_KINDS


def test_limits_table_is_the_servers_and_the_engines() -> None:
    cfg, search = IpcConfig(), SearchConfig()
    assert LIMITS == {
        "max_message_bytes": cfg.max_message_bytes,
        "max_header_bytes": wire.MAX_HEADER_BYTES,
        "max_clock_skew_s": cfg.max_clock_skew_s,
        "max_future_skew_s": cfg.max_future_skew_s,
        "replay_history": cfg.replay_history,
        "max_long_query_chars": wire.MAX_LONG_QUERY_CHARS,
        "max_pending": cfg.max_pending,
        # the engine's own, every one but the floor of a budget, by the doc's names
        **{k: v for k, v in dataclasses.asdict(CALLER_LIMITS).items() if k != "min_budget"},
    }
    # the engine's defaults are the same numbers
    assert search.max_query_chars == LIMITS["max_query_chars"]
    assert search.max_live_items == LIMITS["max_live_items"]
    assert search.max_live_bytes == LIMITS["max_live_bytes"]


def test_error_table_is_every_error_class() -> None:
    classes = {cls.code: cls.name for cls in all_error_classes()}
    assert error_rows(DOC) == classes


def _error(raw: RawPeer, method: str, params: dict[str, Any]) -> CtxError:
    """The server's own answer (a raw peer skips the client's validation)."""
    msg_id, frames = raw.request(method, params)
    raw.send(frames)
    header, body = raw.recv_reply()
    assert header["parent"] == msg_id and body["ok"] is False, body
    return error_from_dict(body["error"])


def _live(n: int, text: str = "x") -> list[dict[str, str]]:
    return [{"kind": "clipboard", "text": text} for _ in range(n)]


@pytest.mark.parametrize(("params", "name", "field"), [
    ({"query": "q" * (_count("max_query_chars") + 1)}, "invalid_input", "build_context.query"),
    ({"query": "q", "budget": _count("max_budget") + 1}, "invalid_budget",
     "build_context.budget"),
    ({"query": "q", "live": _live(_count("max_live_items") + 1)}, "live_snapshot_too_large",
     "build_context.live"),
    ({"query": "q", "live": _live(2, "é" * (_count("max_live_bytes") // 4 + 1))},
     "live_snapshot_too_large", "build_context.live"),
    ({"query": "q", "conversation": [{"role": "user", "text": "t"}] *
      (_count("max_conversation_turns") + 1)}, "invalid_input", "build_context.conversation"),
    ({"query": "q", "live": [{"kind": "hologram", "text": "x"}]}, "invalid_item_kind",
     "build_context.live[0].kind"),
    ({"query": "q", "live": [{"text": "x", "secret_name": 1}]}, "invalid_input",
     "build_context.live[0]"),
])
def test_one_past_each_limit_is_refused_by_the_server(raw: RawPeer, params: dict[str, Any],
                                                      name: str, field: str) -> None:
    err = _error(raw, "build_context", params)
    assert err.name == name
    assert err.details["field"] == field
    assert "secret_name" not in str(err.to_dict())


def test_each_limit_itself_is_served(client: Client) -> None:
    at = {"query": "q" * int(LIMITS["max_query_chars"]), "budget": LIMITS["max_budget"],
          "live": _live(int(LIMITS["max_live_items"]) - 1) + [
              {"kind": "clipboard",
               "text": "x" * (int(LIMITS["max_live_bytes"]) - int(LIMITS["max_live_items"]) + 1)}],
          "conversation": [{"role": "user", "text": "t"}] * int(LIMITS["max_conversation_turns"])}
    payload = client.call("build_context", at)
    assert payload["budget"] == LIMITS["max_budget"]
    assert client.call("build_context", {"query": "q", "budget": 1})["budget"] == 1
    hits = client.call("search", {"query": "s" * int(LIMITS["max_query_chars"]), "k": 1})
    assert len(hits) == 1


def test_the_engine_refuses_exactly_past_the_same_limits() -> None:
    cfg = SearchConfig()
    check_query("q" * int(LIMITS["max_query_chars"]), cfg)
    check_budget(int(LIMITS["max_budget"]))
    check_live(_live(int(LIMITS["max_live_items"])), cfg)
    check_conversation([{"role": "user", "text": "t"}] * int(LIMITS["max_conversation_turns"]))
    refusals = [
        lambda: check_query("q" * (int(LIMITS["max_query_chars"]) + 1), cfg),
        lambda: check_budget(int(LIMITS["max_budget"]) + 1),
        lambda: check_live(_live(int(LIMITS["max_live_items"]) + 1), cfg),
        lambda: check_live([{"text": "x" * (int(LIMITS["max_live_bytes"]) + 1)}], cfg),
        lambda: check_conversation([{"text": "t"}] * (int(LIMITS["max_conversation_turns"]) + 1)),
        lambda: check_live([{"kind": "hologram"}], cfg),
    ]
    for refuse in refusals:
        with pytest.raises(CtxError) as info:
            refuse()
        assert isinstance(info.value.details.get("field"), str)


def test_the_wire_keeps_no_copy_of_the_engines_limits() -> None:
    """ipc/wire.py takes the engine's limits from engine/limits.py (``from engine
    import``): it assigns none of them itself, and each is the engine's number."""
    import ast

    import engine
    from engine import limits

    names = [n for n in vars(limits) if n.isupper()]
    tree = ast.parse((REPO / "ipc" / "wire.py").read_text(encoding="utf-8"))
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    assert not assigned & set(names), sorted(assigned & set(names))
    assert vars(wire)["LIMITS"] is engine.LIMITS is limits.LIMITS  # read, not re-exported
