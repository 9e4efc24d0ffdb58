"""The client: deadlines, lazy-pirate retries, reply verification, rediscovery."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import zmq

from engine.errors import InvalidInput
from ipc.client import Client
from ipc.connection import ConnectionInfo, default_endpoint, make_info
from ipc.errors import BadSignature, IpcTimeout, MessageTooLarge, ProtocolError, UnknownMethod
from ipc.exit_codes import exit_code
from ipc.server import Server
from ipc.session import Message, Session
from tests.ipc.conftest import KEY
from tests.ipc.fake_engine import FakeEngine


@pytest.fixture
def nowhere(data_dir: Path) -> ConnectionInfo:
    """Connection info for an endpoint no server listens on (yet)."""
    return make_info(default_endpoint(data_dir), KEY, data_dir)


def test_timeout_after_every_retry_names_method_and_timeout(nowhere: ConnectionInfo) -> None:
    with Client(nowhere, timeout=0.2, retries=2) as client:
        started = time.monotonic()
        with pytest.raises(IpcTimeout) as info:
            client.call("status")
        elapsed = time.monotonic() - started
        assert client.resets == 3  # a fresh REQ socket after each missed reply
    assert 0.55 < elapsed < 2.0
    message = str(info.value)
    assert "status" in message and "0.2 s" in message and "3 attempts" in message
    assert info.value.details["attempts"] == 3
    assert exit_code(info.value) == 5


def test_writes_are_not_retried_by_default(nowhere: ConnectionInfo) -> None:
    with Client(nowhere, timeout=0.1, retries=3) as client:
        with pytest.raises(IpcTimeout, match="1 attempt"):
            client.call("ingest", {"text": "x"})
        assert client.resets == 1
        with pytest.raises(IpcTimeout, match="3 attempts"):
            client.call("ingest", {"text": "x"}, retries=2)


def test_lazy_pirate_recovers_when_the_server_appears(nowhere: ConnectionInfo,
                                                     engine: FakeEngine) -> None:
    """The first attempts go nowhere; a server bound later answers a retry."""
    client = Client(nowhere, timeout=0.3, retries=20)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(client.call, "build_context", {"query": "late"})
        time.sleep(0.8)
        server = Server(engine, nowhere["endpoint"], KEY)
        server.start()
        try:
            assert pending.result(timeout=10)["context"] == "echo:late"
            assert client.resets >= 2
            assert client.call("ping")["pong"]  # the fresh socket keeps working
        finally:
            client.close()
            server.close(timeout=10)


def test_a_slow_reply_is_abandoned_and_the_next_call_is_clean(client: Client) -> None:
    with pytest.raises(IpcTimeout):
        client.call("search", {"query": "sleep:0.5", "k": 1}, timeout=0.1, retries=0)
    # the late reply to the abandoned request must not be taken for this one
    hits = client.call("search", {"query": "fresh", "k": 1})
    assert hits[0]["title"] == "fresh"
    time.sleep(0.6)
    assert client.call("search", {"query": "again", "k": 1})[0]["title"] == "again"


def test_requests_are_validated_before_sending(client: Client) -> None:
    with pytest.raises(InvalidInput):
        client.call("search", {"query": "q", "bogus": True})
    with pytest.raises(UnknownMethod):
        client.call("rm_rf")
    with pytest.raises(MessageTooLarge):
        Client(client.info, max_message_bytes=4096).call("ingest", {"text": "x" * 5000})


class _Rogue:
    """A ROUTER that answers every request with a reply built by ``answer``."""

    def __init__(self, endpoint: str, answer: Callable[[Message], list[bytes]]) -> None:
        self.sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(endpoint)
        self.answer = answer
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.stop = False
        self.thread.start()

    def _run(self) -> None:
        while not self.stop:
            if self.sock.poll(50):
                frames = self.sock.recv_multipart()
                split = frames.index(b"<IDS|MSG>")
                request = Session(KEY.encode()).unpack(frames)
                self.sock.send_multipart(frames[:split] + self.answer(request))

    def close(self) -> None:
        self.stop = True
        self.thread.join(5)
        self.sock.close()


def test_reply_signed_with_another_key_is_refused(nowhere: ConnectionInfo) -> None:
    rogue = _Rogue(nowhere["endpoint"], lambda req: Session(b"evil").pack(
        "ping", {"ok": True, "result": {}}, parent=req.header["msg_id"])[1])
    try:
        with Client(nowhere, timeout=2) as client, pytest.raises(BadSignature):
            client.call("ping")
    finally:
        rogue.close()


def test_reply_to_another_request_is_refused(nowhere: ConnectionInfo) -> None:
    rogue = _Rogue(nowhere["endpoint"], lambda req: Session(KEY.encode()).pack(
        "ping", {"ok": True, "result": {}}, parent="0" * 32)[1])
    try:
        with Client(nowhere, timeout=2) as client, pytest.raises(ProtocolError):
            client.call("ping")
    finally:
        rogue.close()


@pytest.mark.parametrize("body", [[], {"ok": "yes"}, {"ok": False, "error": "x"},
                                  {"ok": False, "error": {"code": "abc"}}])
def test_malformed_reply_bodies(nowhere: ConnectionInfo, body: object) -> None:
    rogue = _Rogue(nowhere["endpoint"], lambda req: Session(KEY.encode()).pack(
        "ping", body, parent=req.header["msg_id"])[1])
    try:
        with Client(nowhere, timeout=2) as client, pytest.raises(ProtocolError):
            client.call("ping")
    finally:
        rogue.close()


def test_rediscovery_follows_a_restarted_server_with_a_new_key(
        engine: FakeEngine, data_dir: Path) -> None:
    endpoint = default_endpoint(data_dir)
    first = Server(engine, endpoint, KEY)
    first.start()
    current = {"info": make_info(first.endpoint, KEY, data_dir)}
    client = Client(current["info"], timeout=0.3, retries=10,
                    rediscover=lambda: current["info"])
    assert client.call("ping")["pong"]
    first.close(timeout=10)
    new_key = "f" * 64
    second = Server(engine, endpoint, new_key)
    second.start()
    current["info"] = make_info(second.endpoint, new_key, data_dir)
    try:
        assert client.call("build_context", {"query": "after"})["context"] == "echo:after"
        assert client.info["key"] == new_key
    finally:
        client.close()
        second.close(timeout=10)


def test_closed_client_refuses_calls(client: Client) -> None:
    client.close()
    with pytest.raises(ProtocolError):
        client.call("ping")


def test_incompatible_server_version_refused(info: ConnectionInfo) -> None:
    with pytest.raises(ProtocolError):
        Client(dict(info, protocol_version="2.0"))  # type: ignore[arg-type]
