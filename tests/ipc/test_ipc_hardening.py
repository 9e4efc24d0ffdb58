"""Findings of the IPC audit (issue 10): each case through a real server on real sockets."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.errors import ConfigError
from ipc.client import Client
from ipc.connection import make_info, write_connection_file
from ipc.discovery import find_live
from ipc.errors import BadSignature, InternalError, KeyMismatch
from ipc.server import Server
from ipc.wire import DELIMITER, IpcConfig
from tests.ipc.conftest import KEY, RawPeer
from tests.ipc.fake_engine import FakeEngine

PINGS = 10_000


def _date(offset_s: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=offset_s)).isoformat().replace("+00:00", "Z")


def _raw_frames(peer: RawPeer, header: dict[str, Any] | bytes, body: Any) -> list[bytes]:
    """Signed frames built with ASCII JSON, so lone surrogates travel as ``\\ud800`` escapes."""
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    b = json.dumps(body).encode()
    return [DELIMITER, peer.session.sign(h, b), h, b]


def _header(peer: RawPeer, method: str = "ping", **changes: Any) -> dict[str, Any]:
    return {**peer.session.new_header(method), **changes}


def _ask(peer: RawPeer, frames: list[bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    peer.send(frames)
    return peer.recv_reply()


def _pings(peer: RawPeer, n: int, batch: int = 200) -> int:
    """Send ``n`` correctly dated pings, ``batch`` at a time (under the sockets' HWM)."""
    ok = 0
    for start in range(0, n, batch):
        count = min(batch, n - start)
        for _ in range(count):
            peer.send(peer.request("ping", {})[1])
        for _ in range(count):
            ok += bool(peer.recv_reply(timeout=30)[1]["ok"])
    return ok


@pytest.fixture
def peer_of() -> Iterator[Callable[[Server], RawPeer]]:
    peers: list[RawPeer] = []

    def make(server: Server) -> RawPeer:
        peers.append(RawPeer(server.endpoint))
        return peers[-1]
    yield make
    for p in peers:
        p.close()


# -- the replay window ---------------------------------------------------------------


def test_a_message_dated_60_s_ahead_then_10000_pings_leave_the_server_serving(
        server: Server, raw: RawPeer) -> None:
    _, body = _ask(raw, _raw_frames(raw, _header(raw, date=_date(60)), {}))
    assert body["error"]["name"] == "replayed"
    assert body["error"]["details"]["reason"] == "future"
    assert _pings(raw, PINGS) == PINGS
    assert _ask(raw, raw.request("ping", {})[1])[1]["ok"] is True


def test_an_accepted_future_message_cannot_push_the_floor_past_correct_ones(
        make_server: Callable[..., Server], peer_of: Callable[[Server], RawPeer]) -> None:
    # even where the future window is opened wide, eviction follows dates, not arrival
    server = make_server(config=IpcConfig(max_future_skew_s=120, replay_history=1000))
    peer = peer_of(server)
    ahead = _raw_frames(peer, _header(peer, date=_date(60)), {})
    assert _ask(peer, ahead)[1]["ok"] is True
    assert _pings(peer, 1000 + 10) == 1010
    assert _ask(peer, peer.request("ping", {})[1])[1]["ok"] is True
    _, body = _ask(peer, ahead)  # still remembered: its replay is refused
    assert body["error"]["details"]["reason"] == "seen"
    # a message older than what the full history forgot is still refused
    _, body = _ask(peer, _raw_frames(peer, _header(peer, date=_date(-60)), {}))
    assert body["error"]["details"]["reason"] == "too_old"


# -- binding ---------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["tcp://0.0.0.0:*", "tcp://*:*", "tcp://*:5555",
                                      "tcp://192.168.1.10:*", "tcp://eth0:*", "tcp://[::]:*",
                                      "tcp://127.0.0.1.evil.example:*", "inproc://x",
                                      "tcp://127.0.0.1", "udp://127.0.0.1:5"])
def test_only_loopback_may_be_bound(engine: FakeEngine, endpoint: str) -> None:
    with pytest.raises(ConfigError) as info:
        Server(engine, endpoint, KEY)
    assert info.value.code == 1001
    assert info.value.details["key"] == "ipc.endpoint"
    assert info.value.details["reason"] in ("not_loopback", "malformed")
    with pytest.raises(ConfigError):
        IpcConfig(endpoint=endpoint)


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1:*", "tcp://localhost:*",
                                      "tcp://127.0.0.2:*"])
def test_loopback_endpoints_serve(engine: FakeEngine, endpoint: str) -> None:
    with Server(engine, endpoint, KEY) as server:
        server.start()
        assert server.endpoint.startswith("tcp://127.")
        info = make_info(server.endpoint, KEY, engine.data_dir)
        with Client(info, timeout=5) as client:
            assert client.call("ping")["pong"] is True


# -- replies whenever an id can be read ------------------------------------------------------


def test_method_with_a_lone_surrogate_gets_unknown_method(raw: RawPeer) -> None:
    header = _header(raw, method="\ud800")
    reply_header, body = _ask(raw, _raw_frames(raw, header, {}))
    assert reply_header["parent"] == header["msg_id"]
    assert reply_header["method"] == "unknown"
    assert body["error"]["name"] == "unknown_method"


@pytest.mark.parametrize("method", [["ping"], {"a": 1}, 5, None])
def test_oversized_header_with_an_odd_method_still_gets_a_reply(raw: RawPeer,
                                                                 method: Any) -> None:
    header = {**_header(raw), "method": method, "pad": "x" * 9000}
    reply_header, body = _ask(raw, _raw_frames(raw, header, {}))
    assert reply_header["parent"] == header["msg_id"] and reply_header["method"] == "unknown"
    assert body["error"]["name"] == "protocol_error"


@pytest.mark.parametrize("where", ["first", "last"])
def test_header_over_8_kib_gets_an_error_reply(raw: RawPeer, where: str) -> None:
    header = _header(raw)
    pad = {"pad": "x" * 9000}
    header = {**header, **pad} if where == "first" else {**pad, **header}
    reply_header, body = _ask(raw, _raw_frames(raw, header, {}))
    assert reply_header["parent"] == header["msg_id"]
    assert body["error"]["name"] == "protocol_error"


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_header_gets_an_error_reply(raw: RawPeer, depth: int) -> None:
    msg_id = uuid.uuid4().hex
    header = (f'{{"msg_id":"{msg_id}","method":"ping","x":'.encode()
              + b"[" * depth + b"]" * depth + b"}")
    reply_header, body = _ask(raw, _raw_frames(raw, header, {}))
    assert reply_header["parent"] == msg_id
    assert body["error"]["name"] == "protocol_error"


def test_a_header_naming_two_ids_is_dropped_and_the_server_serves_on(raw: RawPeer) -> None:
    ids = [uuid.uuid4().hex for _ in range(2)]
    header = f'{{"msg_id":"{ids[0]}","x":{{"msg_id":"{ids[1]}"}},"y":' + "[" * 100_000
    raw.send(_raw_frames(raw, header.encode(), {}))
    assert raw.recv(timeout=0.5) is None
    assert _ask(raw, raw.request("ping", {})[1])[1]["ok"] is True


@pytest.mark.parametrize(("method", "params", "field"), [
    ("build_context", {"query": "q\ud800"}, "build_context.query"),
    ("build_context", {"query": "q", "live": [{"text": "a\udfff"}]},
     "build_context.live[0].text"),
    ("build_context", {"query": "q", "config": {"k\ud800": 1}}, "build_context.config"),
    ("search", {"query": "q", "kinds": ["\ud83d"]}, "search.kinds[0]"),
    ("job", {"job_id": "\ud800"}, "job.job_id"),
    ("ingest", {"text": "t", "title": "\udc00"}, "ingest.title"),
    ("ingest", {"paths": ["/tmp/\udcff"]}, "ingest.paths[0]"),
    ("delete", {"source": "\ud800"}, "delete.source"),
])
def test_lone_surrogates_in_params_are_not_utf8(raw: RawPeer, engine: FakeEngine, method: str,
                                                 params: dict[str, Any], field: str) -> None:
    _, body = _ask(raw, _raw_frames(raw, _header(raw, method), params))
    assert body["error"]["code"] == 1007
    assert body["error"]["name"] == "not_utf8"
    assert body["error"]["details"]["field"] == field
    assert engine.writes == 0


# -- an error says what is wrong, to its caller only ----------------------------------------


@pytest.mark.parametrize(("method", "params", "name", "named"), [
    ("job", {"job_id": "ada-job-id-4242"}, "not_found", "ada-job-id-4242"),
    ("build_context", {"query": "q", "config": {"ada_section": {"x": 1}}}, "config_invalid",
     "ada_section"),
])
def test_engine_errors_may_name_the_callers_own_input(raw: RawPeer, method: str,
                                                      params: dict[str, Any], name: str,
                                                      named: str) -> None:
    """One rule (docs/wire.md section 6): the reply goes only to its caller and says
    what the engine says in process, the caller's own values included."""
    _, body = _ask(raw, _raw_frames(raw, _header(raw, method), params))
    assert body["error"]["name"] == name
    assert named in body["error"]["message"] and "withheld" not in body["error"]["message"]


@pytest.mark.parametrize(("method", "params", "name"), [
    ("secret_method", {}, "unknown_method"),
    ("search", {"query": "q", "secret_field": 1}, "invalid_input"),
    ("build_context", {"query": "q", "live": [{"text": "x", "secret_key": 1}]}, "invalid_input"),
])
def test_refusals_before_the_engine_count_without_naming(raw: RawPeer, method: str,
                                                         params: dict[str, Any],
                                                         name: str) -> None:
    header, body = _ask(raw, _raw_frames(raw, _header(raw, method), params))
    assert body["error"]["name"] == name
    assert "secret" not in json.dumps(body) and "secret" not in json.dumps(header)
    if body["error"]["code"] in range(1002, 1008):
        assert body["error"]["details"]["field"].startswith(method)


def test_no_method_takes_a_secret() -> None:
    """What lets an error name the caller's own input: no parameter is a passphrase, a
    key or a recovery key (they are given to the engine's own process)."""
    from ipc.wire import METHODS

    names = {p for spec in METHODS.values() for p in spec.params}
    assert not {n for n in names if any(w in n for w in ("pass", "secret", "recovery"))
                or n == "key" or n.endswith("_key")}, names


def test_an_error_never_repeats_the_connection_key(raw: RawPeer) -> None:
    _, body = _ask(raw, _raw_frames(raw, _header(raw, "job"), {"job_id": KEY}))
    assert body["error"]["name"] == "not_found"
    assert KEY not in json.dumps(body) and "withheld" in body["error"]["message"]


def test_a_job_that_failed_on_a_bug_is_internal_error(client: Client) -> None:
    job = client.call("job", {"job_id": "bugjob"})
    assert job["state"] == "failed"
    assert job["error"]["code"] == 2008 and job["error"]["name"] == "internal_error"
    assert job["error"]["details"]["type"] == "RuntimeError"
    assert "secret" not in json.dumps(job)
    with pytest.raises(InternalError) as info:
        client.call("sync", {"paths": ["raise:jobbug"]})
    assert info.value.code == 2008 and info.value.details["type"] == "RuntimeError"


# -- a restarted server --------------------------------------------------------------------


@pytest.fixture
def restarted(server: Server, engine: FakeEngine) -> Iterator[tuple[Client, Callable[[], Server]]]:
    """A client of ``server``, and a function that replaces the server with a new key."""
    client = Client(make_info(server.endpoint, KEY, engine.data_dir), timeout=5, retries=0,
                    rediscover=lambda: find_live(engine.data_dir))
    assert client.call("ping")["pong"] is True
    started: list[Server] = []

    def restart() -> Server:
        server.close(timeout=10)
        new = Server(engine, server.endpoint, "f" * 64)
        new.start()
        started.append(new)
        return new
    yield client, restart
    client.close()
    for s in started:
        s.close(timeout=10)


def test_old_key_gets_key_mismatch_not_a_verification_failure(
        restarted: tuple[Client, Callable[[], Server]]) -> None:
    client, restart = restarted
    restart()  # and no connection file to rediscover it by
    with pytest.raises(KeyMismatch) as info:
        client.call("ping")
    assert info.value.code == 2009 and isinstance(info.value, BadSignature)
    assert "restarted" in info.value.message


def test_old_key_client_rediscovers_the_new_key_and_is_served(
        restarted: tuple[Client, Callable[[], Server]], engine: FakeEngine) -> None:
    client, restart = restarted
    new = restart()
    write_connection_file(make_info(new.endpoint, "f" * 64, engine.data_dir))
    # not idempotent, no retries: refused unverified by the new server, then sent again
    # once with the new key, and acted on once
    job_id = client.call("ingest", {"text": "once", "title": "t"})["job_id"]
    assert client.call("job", {"job_id": job_id})["state"] == "done"
    assert engine.writes == 1
    assert new.stats()["rejected:bad_signature"] == 1
