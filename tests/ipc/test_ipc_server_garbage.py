"""Whatever arrives on the socket, the server answers or drops it and keeps serving."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from ipc.server import Server
from ipc.session import Session, dumps
from ipc.wire import DELIMITER
from tests.ipc.conftest import RawPeer
from tests.ipc.fake_engine import FakeEngine

LIMIT = 64 * 1024
Build = Callable[[RawPeer], list[bytes]]


def _valid(peer: RawPeer, method: str = "ping", body: object = None) -> list[bytes]:
    return peer.request(method, {} if body is None else body)[1]


def _signed(peer: RawPeer, header: object, body: bytes = b"{}") -> list[bytes]:
    raw_header = header if isinstance(header, bytes) else dumps(header)
    return [DELIMITER, peer.session.sign(raw_header, body), raw_header, body]


def _header(peer: RawPeer, method: str = "ping", **changes: object) -> dict:
    header = peer.session.new_header(method)
    header.update(changes)
    return header


def _without(peer: RawPeer, name: str) -> dict:
    header = _header(peer)
    del header[name]
    return header


def _tampered(peer: RawPeer) -> list[bytes]:
    frames = _valid(peer, "ingest", {"text": "must not be stored"})
    frames[3] = frames[3].replace(b"must not", b"must NOT")
    return frames


def _dated(peer: RawPeer, hours: int) -> dict:
    when = (datetime.now(UTC) + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")
    return _header(peer, "ingest", date=when)


CASES: list[tuple[str, Build, str | None]] = [
    ("random bytes", lambda p: [random.Random(1).randbytes(100)], None),
    ("one empty frame", lambda p: [b""], None),
    ("no delimiter", lambda p: [b"a", b"b", b"c", b"d"], None),
    ("delimiter only", lambda p: [DELIMITER], None),
    ("delimiter and signature only", lambda p: [DELIMITER, b"00" * 32], None),
    ("body frame missing", lambda p: _valid(p)[:3], "protocol_error"),
    ("extra frame", lambda p: [*_valid(p), b"extra"], "protocol_error"),
    ("tampered body", _tampered, "bad_signature"),
    ("unsigned", lambda p: [DELIMITER, b"", *_valid(p)[2:]], "bad_signature"),
    ("wrong key", lambda p: Session(b"not the key").pack("ingest", {"text": "x"})[1],
     "bad_signature"),
    ("signature not hex", lambda p: [DELIMITER, b"\xff" * 64, *_valid(p)[2:]], "bad_signature"),
    ("header not JSON", lambda p: _signed(p, b"{nope"), None),
    ("header not UTF-8", lambda p: _signed(p, b"\xff\xfe\x00"), None),
    ("header is a list", lambda p: _signed(p, b"[1,2]"), None),
    ("header msg_id not hex", lambda p: _signed(p, _header(p, msg_id="Z" * 32)), None),
    ("header too big", lambda p: _signed(p, _header(p, pad="x" * 9000)), "protocol_error"),
    ("header without method", lambda p: _signed(p, _without(p, "method")), "protocol_error"),
    ("header without date", lambda p: _signed(p, _without(p, "date")), "protocol_error"),
    ("header with bad date", lambda p: _signed(p, _header(p, date="yesterday")),
     "protocol_error"),
    ("header pid not int", lambda p: _signed(p, _header(p, pid="1")), "protocol_error"),
    ("future protocol version", lambda p: _signed(p, _header(p, version="2.0")),
     "protocol_error"),
    ("body not JSON", lambda p: _signed(p, _header(p), b"{]"), "protocol_error"),
    ("body with NaN", lambda p: _signed(p, _header(p), b'{"k": NaN}'), "protocol_error"),
    ("body deeply nested", lambda p: _signed(p, _header(p), b"[" * 50_000), "protocol_error"),
    ("date an hour ahead", lambda p: _signed(p, _dated(p, 1), b'{"text": "x"}'), "replayed"),
    ("date an hour behind", lambda p: _signed(p, _dated(p, -1), b'{"text": "x"}'), "replayed"),
    ("unknown method", lambda p: _valid(p, "drop_everything"), "unknown_method"),
    ("unknown field", lambda p: _valid(p, "ingest", {"text": "x", "evil": 1}), "invalid_input"),
    ("wrong field type", lambda p: _valid(p, "ingest", {"text": 5}), "invalid_input"),
    ("body is a list", lambda p: _valid(p, "ingest", ["x"]), "invalid_input"),
    ("budget negative", lambda p: _valid(p, "build_context", {"query": "q", "budget": -1}),
     "invalid_budget"),
    ("over the size limit", lambda p: _valid(p, "ingest", {"text": "x" * (LIMIT - 100)}),
     "message_too_large"),
]


@pytest.fixture
def small_server(make_server: Callable[..., Server]) -> Server:
    return make_server(max_message_bytes=LIMIT)


@pytest.fixture
def peer(small_server: Server) -> Iterator[RawPeer]:
    p = RawPeer(small_server.endpoint)
    yield p
    p.close()


def _ping_after(peer: RawPeer) -> str:
    ping_id, frames = peer.request("ping", {})
    peer.send(frames)
    return ping_id


@pytest.mark.parametrize(("name", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_garbage_gets_error_reply_or_is_dropped(peer: RawPeer, small_server: Server,
                                                engine: FakeEngine, name: str, build: Build,
                                                expected: str | None) -> None:
    peer.send(build(peer))
    ping_id = _ping_after(peer)
    header, body = peer.recv_reply()
    if expected is not None:
        assert body["ok"] is False
        assert body["error"]["name"] == expected
        assert isinstance(body["error"]["code"], int)
        assert small_server.stats()[f"rejected:{expected}"] == 1
        header, body = peer.recv_reply()
    else:
        assert small_server.stats()["dropped"] == 1
    assert header["parent"] == ping_id and body["ok"] is True  # still serving
    assert engine.writes == 0 and engine.docs == {}  # nothing stored changed
    assert small_server.stats().get("loop_errors", 0) == 0


def test_replayed_request_is_refused(peer: RawPeer, engine: FakeEngine) -> None:
    frames = _valid(peer, "ingest", {"text": "once"})
    peer.send(frames)
    assert peer.recv_reply()[1]["ok"] is True
    peer.send(frames)
    assert peer.recv_reply()[1]["error"]["name"] == "replayed"
    assert engine.writes == 1


def test_frame_over_maxmsgsize_drops_the_peer_not_the_server(small_server: Server,
                                                             engine: FakeEngine) -> None:
    bad = RawPeer(small_server.endpoint)
    bad.send(_valid(bad, "ingest", {"text": "x" * (LIMIT + 10)}))
    assert bad.recv(timeout=0.5) is None
    bad.close()
    good = RawPeer(small_server.endpoint)
    try:
        good.send(_valid(good))
        assert good.recv_reply()[1]["ok"] is True
    finally:
        good.close()
    assert engine.docs == {}


def test_garbage_storm(small_server: Server, engine: FakeEngine) -> None:
    """Hundreds of random and mutated messages, then the server still answers."""
    rng = random.Random(20240601)
    peer = RawPeer(small_server.endpoint)
    try:
        for _ in range(400):
            frames = _valid(peer, rng.choice(["ping", "ingest", "search"]), {"text": 5})
            mode = rng.randrange(4)
            if mode == 0:
                frames = [rng.randbytes(rng.randrange(0, 200)) for _ in range(rng.randrange(1, 6))]
            elif mode == 1:
                i = rng.randrange(len(frames))
                frame = bytearray(frames[i] or b"\x00")
                frame[rng.randrange(len(frame))] = rng.randrange(256)
                frames[i] = bytes(frame)
            elif mode == 2:
                rng.shuffle(frames)
            else:
                frames = frames[: rng.randrange(len(frames))] or [b""]
            peer.send(frames)
        ping_id = _ping_after(peer)
        for _ in range(401):
            header, body = peer.recv_reply()
            if header["parent"] == ping_id:
                break
            assert body["ok"] is False
        assert body["ok"] is True
    finally:
        peer.close()
    stats = small_server.stats()
    assert stats["received"] == 401
    assert stats.get("loop_errors", 0) == 0
    assert engine.writes == 0
