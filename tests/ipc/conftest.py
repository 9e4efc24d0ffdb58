"""Fixtures for wire tests: a private runtime dir, a fake engine, a served server."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from ipc.client import Client
from ipc.connection import ENV_RUNTIME_DIR, ConnectionInfo, default_endpoint, make_info
from ipc.server import Server
from ipc.session import Session
from tests.ipc.fake_engine import FakeEngine

KEY = "0123456789abcdef" * 4


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private runtime dir (AF_UNIX paths are limited to ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="ctxrt-"))
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def engine(data_dir: Path) -> Iterator[FakeEngine]:
    eng = FakeEngine.open(data_dir)
    yield eng
    eng.release_ingest.set()
    eng.close()


@pytest.fixture
def make_server(engine: FakeEngine) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def make(**kwargs: object) -> Server:
        endpoint = str(kwargs.pop("endpoint", default_endpoint(engine.data_dir)))
        server = Server(engine, endpoint, KEY, **kwargs)  # type: ignore[arg-type]
        server.start()
        started.append(server)
        return server

    yield make
    engine.release_ingest.set()
    for server in started:
        server.close(timeout=10)


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    return make_server()


@pytest.fixture
def info(server: Server, engine: FakeEngine) -> ConnectionInfo:
    return make_info(server.endpoint, KEY, engine.data_dir)


@pytest.fixture
def client(info: ConnectionInfo) -> Iterator[Client]:
    with Client(info, timeout=5.0) as c:
        yield c


class RawPeer:
    """A DEALER socket that sends arbitrary frames and reads verified replies."""

    def __init__(self, endpoint: str, key: str = KEY) -> None:
        self.sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.session = Session(key.encode())
        self.endpoint = endpoint

    def send(self, frames: list[bytes]) -> None:
        self.sock.send_multipart(frames)

    def request(self, method: str, body: object) -> tuple[str, list[bytes]]:
        header, frames = self.session.pack(method, body)
        return header["msg_id"], frames

    def recv(self, timeout: float = 5.0) -> list[bytes] | None:
        if not self.sock.poll(int(timeout * 1000)):
            return None
        return self.sock.recv_multipart()

    def recv_reply(self, timeout: float = 5.0) -> tuple[dict, dict]:
        frames = self.recv(timeout)
        assert frames is not None, "no reply"
        msg = self.session.unpack(frames, reply=True)
        return msg.header, msg.body

    def close(self) -> None:
        self.sock.close(linger=0)


@pytest.fixture
def raw(server: Server) -> Iterator[RawPeer]:
    peer = RawPeer(server.endpoint)
    yield peer
    peer.close()


def wait_for(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def env_for_subprocess(runtime: Path, **extra: str) -> dict[str, str]:
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env.update({ENV_RUNTIME_DIR: str(runtime), "PYTHONPATH": str(repo)}, **extra)
    return env
