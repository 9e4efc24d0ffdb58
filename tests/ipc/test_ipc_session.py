"""Signing, verification and replay protection of single messages."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc.session import Rejected, Session, dumps
from ipc.wire import DELIMITER

KEY = b"k" * 64


def _names(frames: list[bytes], sess: Session, reply: bool = False) -> str:
    with pytest.raises(Rejected) as info:
        sess.unpack(frames, reply=reply)
    return info.value.error.name


def test_roundtrip_and_signature_is_plain_hmac_sha256() -> None:
    sender, receiver = Session(KEY), Session(KEY)
    header, frames = sender.pack("search", {"query": "q"}, identities=[b"id", b""])
    assert frames[:3] == [b"id", b"", DELIMITER]
    expected = hmac.new(KEY, frames[4] + frames[5], hashlib.sha256).hexdigest().encode()
    assert frames[3] == expected
    msg = receiver.unpack(frames)
    assert msg.identities == [b"id", b""]
    assert msg.header == header
    assert msg.body == {"query": "q"}
    assert set(header) == {"msg_id", "method", "version", "date", "pid"}


def test_reply_header_carries_parent() -> None:
    sess = Session(KEY)
    header, frames = sess.pack("ping", {"ok": True}, parent="f" * 32)
    assert header["parent"] == "f" * 32
    assert Session(KEY).unpack(frames, reply=True).header["parent"] == "f" * 32
    _, request = sess.pack("ping", {})
    assert _names(request, Session(KEY), reply=True) == "protocol_error"


@pytest.mark.parametrize("index", [1, 2, 3])
def test_tampering_any_signed_byte_is_caught(index: int) -> None:
    _, frames = Session(KEY).pack("search", {"query": "q"})
    frame = bytearray(frames[index])
    frame[len(frame) // 2] ^= 0x01
    frames[index] = bytes(frame)
    assert _names(frames, Session(KEY)) == "bad_signature"


def test_wrong_key_and_unsigned() -> None:
    _, frames = Session(b"other").pack("ping", {})
    assert _names(frames, Session(KEY)) == "bad_signature"
    _, frames = Session(KEY).pack("ping", {})
    frames[1] = b""
    assert _names(frames, Session(KEY)) == "bad_signature"


def test_signature_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)  # the module ipc.session calls
    _, frames = Session(KEY).pack("ping", {})
    Session(KEY).unpack(frames)
    assert len(calls) == 1 and calls[0][0] == frames[1]


def test_replay_is_refused() -> None:
    receiver = Session(KEY)
    _, frames = Session(KEY).pack("ping", {})
    receiver.unpack(frames)
    assert _names(frames, receiver) == "replayed"


def _signed(sess: Session, header: dict, body: object = None) -> list[bytes]:
    h, b = dumps(header), dumps({} if body is None else body)
    return [DELIMITER, sess.sign(h, b), h, b]


@pytest.mark.parametrize("offset", [-3600, 3600])
def test_dates_outside_the_window_are_refused(offset: int) -> None:
    sess = Session(KEY, max_clock_skew_s=60)
    header = sess.new_header("ping")
    when = datetime.now(UTC) + timedelta(seconds=offset)
    header["date"] = when.isoformat().replace("+00:00", "Z")
    with pytest.raises(Rejected) as info:
        sess.unpack(_signed(sess, header))
    assert info.value.error.name == "replayed"
    assert info.value.error.details["reason"] == ("date" if offset < 0 else "future")


def test_naive_date_is_malformed() -> None:
    sess = Session(KEY)
    header = sess.new_header("ping")
    header["date"] = "2026-01-01T00:00:00"
    assert _names(_signed(sess, header), sess) == "protocol_error"


def test_history_is_bounded_and_evicted_dates_become_a_floor() -> None:
    receiver = Session(KEY, history_size=16)
    sender = Session(KEY)
    old_header = sender.new_header("ping")
    old = _signed(sender, old_header)
    newer = [sender.pack("ping", {})[1] for _ in range(16)]
    receiver.unpack(old)
    for frames in newer:
        receiver.unpack(frames)
    assert receiver.history_len() == 16
    # the first message fell out of history, but its replay is still refused
    assert _names(old, receiver) == "replayed"
    late_header = dict(old_header, msg_id="e" * 32)
    assert _names(_signed(sender, late_header), receiver) == "replayed"


def test_size_limit() -> None:
    sess = Session(KEY, max_message_bytes=4096)
    _, frames = Session(KEY).pack("ingest", {"text": "x" * 5000})
    assert _names(frames, sess) == "message_too_large"


@pytest.mark.parametrize(("frames", "addressable"), [
    ([b"garbage"], False),
    ([b"id", DELIMITER], False),
    ([b"id", DELIMITER, b"sig"], False),
])
def test_unaddressable_garbage(frames: list[bytes], addressable: bool) -> None:
    with pytest.raises(Rejected) as info:
        Session(KEY).unpack(frames)
    assert (info.value.header is not None) is addressable


def test_bad_json_body_and_nan() -> None:
    sess = Session(KEY)
    header = dumps(sess.new_header("ping"))
    for body in (b"{", b"\xff\xfe", b'{"x": NaN}', b"[" * 100_000):
        frames = [DELIMITER, sess.sign(header, body), header, body]
        with pytest.raises(Rejected) as info:
            Session(KEY).unpack(frames)
        assert info.value.error.name == "protocol_error"
        assert info.value.header is not None  # addressable: gets an error reply
        header = dumps(sess.new_header("ping"))


def test_json_is_compact_utf8_and_never_nan() -> None:
    assert dumps({"a": "é"}) == '{"a":"é"}'.encode()
    with pytest.raises(ValueError):
        dumps({"a": float("nan")})
    assert json.loads(dumps([1, 2])) == [1, 2]


def test_empty_key_refused() -> None:
    with pytest.raises(ValueError):
        Session(b"")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64) | st.just(DELIMITER), max_size=8))
def test_random_frames_only_ever_rejected(frames: list[bytes]) -> None:
    with pytest.raises(Rejected):
        Session(KEY).unpack(frames)
