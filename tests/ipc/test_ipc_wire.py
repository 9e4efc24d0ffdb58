"""The request/reply schemas and the tiny validator."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config_base import bounds_of
from engine.errors import ConfigError, CtxError, InvalidBudget, InvalidInput
from ipc.errors import ProtocolError, UnknownMethod
from ipc.wire import (
    METHODS,
    PROTOCOL_VERSION,
    Field,
    IpcConfig,
    check,
    check_header,
    validate_params,
    validate_result,
    version_compatible,
)

GOOD = {
    "ping": {},
    "status": {},
    "metrics": {},
    "jobs": {},
    "job": {"job_id": "abc"},
    "cancel_job": {"job_id": "abc"},
    "audit": {"since": 0, "limit": 10},
    "ingest": {"text": "hello", "title": "t", "kind": "text", "wait": False},
    "build_context": {"query": "q", "live": [{"kind": "clipboard", "text": "x"}],
                      "conversation": [], "budget": 500, "config": {"a": 1}, "fmt": "text",
                      "mode": None, "now": 1.5},
    "search": {"query": "q", "k": 5, "kinds": ["section"], "path_prefix": "/x",
               "since": 0.0, "until": 1e9},
    "recall": {"query": None, "auto": True, "project": "p", "branch": "main", "k": 3,
               "budget": 100, "types": ["code"], "task": "t", "fmt": "context"},
    "sources": {"project": "p"},
    "delete": {"source": "/tmp/a", "wait": False},
    "compact": {"wait": False},
    "rotate_key": {"wait": False},
    "forget_folder": {"folder": "/tmp/sessions"},
    "sync": {"paths": ["/tmp/a"]},
    "backup": {"path": "/tmp/b.ctxbackup", "include_vectors": None},
    "verify_backup": {"path": "/tmp/b.ctxbackup"},
    "export": {"path": "/tmp/e.jsonl", "fmt": "jsonl", "kind": "document", "project": None},
    "shutdown": {},
}


def test_every_method_has_a_good_example() -> None:
    assert set(GOOD) == set(METHODS)
    for method, params in GOOD.items():
        assert validate_params(method, params) == params


@pytest.mark.parametrize(("method", "params", "error", "field"), [
    ("search", {"query": "q", "bogus": 1}, InvalidInput, "search"),
    ("search", {}, InvalidInput, "search.query"),
    ("search", {"query": 3}, InvalidInput, "search.query"),
    ("search", {"query": "q", "k": 0}, InvalidInput, "search.k"),
    ("search", {"query": "q", "k": 1001}, InvalidInput, "search.k"),
    ("search", {"query": "q", "k": True}, InvalidInput, "search.k"),
    ("search", {"query": "q", "k": 2.5}, InvalidInput, "search.k"),
    ("search", {"query": "q", "since": math.inf}, InvalidInput, "search.since"),
    ("search", {"query": "q", "kinds": "section"}, InvalidInput, "search.kinds"),
    ("search", {"query": "q", "kinds": [1]}, InvalidInput, "search.kinds[0]"),
    ("build_context", {"query": "q", "budget": -1}, InvalidBudget, "build_context.budget"),
    ("build_context", {"query": "q", "budget": 10**9}, InvalidBudget, "build_context.budget"),
    ("build_context", {"query": "q", "live": [1]}, InvalidInput, "build_context.live[0]"),
    ("build_context", {"query": None}, InvalidInput, "build_context.query"),
    ("ingest", {"kind": "nonsense"}, InvalidInput, "ingest.kind"),
    ("ingest", {"paths": [""]}, InvalidInput, "ingest.paths[0]"),
    ("ingest", {"wait": "yes"}, InvalidInput, "ingest.wait"),
    ("job", {"job_id": ""}, InvalidInput, "job.job_id"),
    ("ping", [], InvalidInput, "ping"),
    ("ping", {"x": 1}, InvalidInput, "ping"),
])
def test_bad_params_are_refused(method: str, params: Any, error: type[CtxError],
                                field: str) -> None:
    with pytest.raises(error) as info:
        validate_params(method, params)
    assert type(info.value) is error
    assert info.value.details["field"] == field


def test_unknown_fields_are_counted_never_named() -> None:
    with pytest.raises(InvalidInput, match="1 unknown field") as info:
        validate_params("search", {"query": "q", "bogus": 1})
    assert "bogus" not in str(info.value) and "bogus" not in str(info.value.details)
    assert info.value.details["allowed"] == list(METHODS["search"].params)
    with pytest.raises(InvalidInput) as info:
        validate_params("status", {"secret user text!": 1})
    assert "secret" not in str(info.value)


def test_unknown_method() -> None:
    with pytest.raises(UnknownMethod):
        validate_params("drop_tables", {})
    with pytest.raises(UnknownMethod):
        validate_params(None, {})  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(method=st.sampled_from(sorted(METHODS)),
       params=st.recursive(
           st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
           lambda inner: st.lists(inner, max_size=3)
           | st.dictionaries(st.sampled_from(["query", "k", "budget", "paths", "text", "x"]),
                             inner, max_size=4),
           max_leaves=10))
def test_validator_only_raises_invalid_input(method: str, params: Any) -> None:
    try:
        out = validate_params(method, params)
    except InvalidInput:
        return
    assert out == params


def test_results_are_checked() -> None:
    validate_result("ping", {"pong": True, "version": "1.0", "pid": 1})
    with pytest.raises(InvalidInput):
        validate_result("ping", {"pong": True})
    with pytest.raises(InvalidInput):
        validate_result("job", {"id": "x", "state": "exploded", "files_total": 0,
                                "files_done": 0, "chunks": 0, "errors": []})


def test_schema_bug_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        check(1, Field("complex"), "x")


def test_versions() -> None:
    assert version_compatible(PROTOCOL_VERSION)
    assert version_compatible("1.7")
    assert not version_compatible("2.0")
    assert not version_compatible("1")
    assert not version_compatible(1.0)


def _header(**kw: Any) -> dict[str, Any]:
    h = {"msg_id": "a" * 32, "method": "ping", "version": "1.0",
         "date": "2026-01-01T00:00:00Z", "pid": 1}
    h.update(kw)
    return h


@pytest.mark.parametrize("bad", [
    {"msg_id": "A" * 32}, {"msg_id": "x"}, {"method": 3}, {"version": "2.0"}, {"pid": -1},
    {"pid": True}, {"date": 5},
])
def test_bad_headers(bad: dict[str, Any]) -> None:
    check_header(_header(), reply=False)
    with pytest.raises(ProtocolError):
        check_header(_header(**bad), reply=False)


def test_reply_header_needs_parent() -> None:
    with pytest.raises(ProtocolError):
        check_header(_header(), reply=True)
    assert check_header(_header(parent="b" * 32), reply=True)["parent"] == "b" * 32
    with pytest.raises(ProtocolError):
        check_header([], reply=False)


@pytest.mark.parametrize("kw", [{"workers": 0}, {"max_message_bytes": 10}, {"retries": -1},
                                {"timeout_s": 0}, {"endpoint": "http://x"}, {"workers": True}])
def test_config_rejects_bad_values(kw: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        IpcConfig(**kw)
    assert IpcConfig().max_message_bytes == 16 * 1024 * 1024


@pytest.mark.parametrize(("kw", "key", "why"), [
    ({"workers": 2.5}, "ipc.workers", "an integer between 1 and 256"),
    ({"replay_history": 100.5}, "ipc.replay_history", "an integer"),
    ({"timeout_s": "fast"}, "ipc.timeout_s", "between 0.01 and 86400"),
    ({"max_clock_skew_s": math.nan}, "ipc.max_clock_skew_s", "between 1 and 86400"),
    ({"max_pending": 0}, "ipc.max_pending", "between 1 and 1000000"),
])
def test_config_ranges_are_the_shared_bounded_fields(kw: dict[str, Any], key: str,
                                                     why: str) -> None:
    """IpcConfig states its ranges as every config section does (engine.bounded): a count
    takes whole numbers only, and a value of the wrong type is a ConfigError naming the
    key, not a TypeError."""
    with pytest.raises(ConfigError) as caught:
        IpcConfig(**kw)
    assert caught.value.details["key"] == key and why in caught.value.message
    assert set(bounds_of(IpcConfig)) == {f.name for f in dataclasses.fields(IpcConfig)} - {
        "endpoint"}


def test_msg_id_with_a_trailing_newline_is_refused() -> None:
    header = {"msg_id": "a" * 32 + "\n", "method": "ping", "version": PROTOCOL_VERSION,
              "date": "2026-01-01T00:00:00Z", "pid": 1}
    with pytest.raises(ProtocolError):
        check_header(header, reply=False)
