"""The wire after issue 21: errors about the caller's own input say what is wrong and
name the field (the reply goes only to its caller, so it may name the caller's own
values, as ``--local`` does), dates are checked as the doc says, IPv6 loopback serves, and a header over
8 KiB naming two ids gets no reply."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.facade import ContextEngine
from ipc.client import Client
from ipc.connection import default_endpoint, make_info
from ipc.server import Server
from tests.ipc.conftest import KEY, RawPeer
from tests.ipc.fake_engine import FakeEngine


@pytest.fixture
def real(tmp_path: Path) -> Iterator[RawPeer]:
    """A raw peer of a server of the real engine (fake embedder)."""
    eng = ContextEngine.open(tmp_path / "store")
    server = Server(eng, default_endpoint(eng.data_dir), KEY)
    server.start()
    peer = RawPeer(server.endpoint)
    try:
        yield peer
    finally:
        peer.close()
        server.close(timeout=10)
        eng.close()


def _error(raw: RawPeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    msg_id, frames = raw.request(method, params)
    raw.send(frames)
    header, body = raw.recv_reply(timeout=30)
    assert header["parent"] == msg_id and body["ok"] is False, body
    return dict(body["error"])


@pytest.mark.parametrize(("method", "params", "name", "field", "words"), [
    ("build_context", {"query": ""}, "empty_query", "build_context.query",
     "the query is empty"),
    ("search", {"query": "  ", "k": 3}, "empty_query", "search.query", "the query is empty"),
    ("recall", {}, "invalid_input", "recall.query", "give a query"),
    ("recall", {"query": "x", "index": ["/nonexistent/ada-folder"]}, "not_found",
     "recall.index[0]", "no such folder"),
    ("job", {"job_id": "ada-job-4242"}, "not_found", "job.job_id", "no such job"),
    ("delete", {"source": "/home/ada/ada-plans.md"}, "not_found", "delete.source",
     "no such source"),
])
def test_input_errors_say_what_is_wrong_and_where(real: RawPeer, method: str,
                                                  params: dict[str, Any], name: str,
                                                  field: str, words: str) -> None:
    err = _error(real, method, params)
    assert err["name"] == name and err["details"]["field"] == field
    assert words in err["message"] and "withheld" not in err["message"]


def _in_process(eng_dir: Path, call: Any) -> dict[str, Any]:
    from engine import CtxError
    eng = ContextEngine.open(eng_dir)
    try:
        call(eng)
    except CtxError as exc:
        return dict(exc.to_dict())
    finally:
        eng.close()
    raise AssertionError("no error")


def test_a_path_the_caller_typed_is_named_as_in_process(tmp_path: Path) -> None:
    """``ctx backup --verify MISSING`` and ``ctx export EXISTING`` through a server say
    what ``--local`` says (issue 32: they said "message withheld")."""
    missing, existing = tmp_path / "MISSING.ctxb", tmp_path / "notes.md"
    existing.write_text("mine", encoding="utf-8")
    store = tmp_path / "store"
    local_verify = _in_process(store, lambda e: e.verify_backup(str(missing)))
    local_export = _in_process(store, lambda e: e.export(str(existing)))
    eng = ContextEngine.open(store)
    server = Server(eng, default_endpoint(eng.data_dir), KEY)
    server.start()
    peer = RawPeer(server.endpoint)
    try:
        verify = _error(peer, "verify_backup", {"path": str(missing)})
        export = _error(peer, "export", {"path": str(existing)})
    finally:
        peer.close()
        server.close(timeout=10)
        eng.close()
    assert verify["message"] == local_verify["message"] and str(missing) in verify["message"]
    assert export["message"] == local_export["message"] and str(existing) in export["message"]
    assert verify["name"] == local_verify["name"] and export["name"] == local_export["name"]
    assert existing.read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize(("item", "ok"), [
    ({"captured_at": 1.7e9}, True), ({"captured_at": "2026-05-09"}, True),
    ({"captured_at": "2026-05-09T07:35:25Z"}, True), ({"captured_at": None}, True),
    ({"captured_at": "yesterday"}, False), ({"captured_at": True}, False),
    ({"captured_at": [2026]}, False),
])
def test_captured_at_takes_epoch_seconds_or_an_iso_date(raw: RawPeer, item: dict[str, Any],
                                                        ok: bool) -> None:
    params = {"query": "q", "live": [{"kind": "clipboard", "text": "t", **item}]}
    raw.send(raw.request("build_context", params)[1])
    _, body = raw.recv_reply()
    assert body["ok"] is ok, body
    if not ok:
        assert body["error"]["code"] == 1002
        assert body["error"]["details"]["field"] == "build_context.live[0].captured_at"


def test_a_turns_time_is_a_date_too(raw: RawPeer) -> None:
    params = {"query": "q", "conversation": [{"role": "user", "text": "t", "time": "soon"}]}
    raw.send(raw.request("build_context", params)[1])
    _, body = raw.recv_reply()
    assert body["error"]["details"]["field"] == "build_context.conversation[0].time"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_ipv6_loopback_serves(engine: FakeEngine) -> None:
    with Server(engine, "tcp://[::1]:*", KEY) as server:
        server.start()
        assert server.endpoint.startswith("tcp://[::1]:")
        with Client(make_info(server.endpoint, KEY, engine.data_dir), timeout=5) as client:
            assert client.call("ping")["pong"] is True
            assert client.call("search", {"query": "ferry", "k": 1})[0]["title"] == "ferry"


def test_a_header_over_8_kib_naming_two_ids_gets_no_reply(raw: RawPeer) -> None:
    ids = [uuid.uuid4().hex for _ in range(2)]
    header = (f'{{"msg_id":"{ids[0]}","method":"ping","version":"1.0","pad":"{"x" * 9000}",'
              f'"msg_id":"{ids[1]}"}}').encode()
    body = b"{}"
    raw.send([b"<IDS|MSG>", raw.session.sign(header, body), header, body])
    assert raw.recv(timeout=0.5) is None
    msg_id, frames = raw.request("ping", {})  # the server serves on
    raw.send(frames)
    assert raw.recv_reply()[0]["parent"] == msg_id
