"""ServerHost: the in-process server the desktop app and ``serve()`` share."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ipc.connection import ConnectionInfo, connection_file_path
from ipc.discovery import find_live
from ipc.remote import RemoteEngine
from ipc.serve import ServerHost, serve
from tests.ipc.conftest import wait_for
from tests.ipc.fake_engine import FakeEngine


def test_host_serves_an_open_engine_and_leaves_it_open(data_dir: Path) -> None:
    engine = FakeEngine.open(data_dir)
    try:
        host = ServerHost(engine)
        assert host.info is None and host.stats() == {"running": False}
        info = host.start()
        assert host.info == info and info["pid"] == os.getpid()
        path = connection_file_path(data_dir)
        assert path.exists() and find_live(data_dir) == info
        with RemoteEngine(info, timeout=5) as remote:
            assert remote.ping()["pong"]
            remote.status()
        # a reply is counted just after it leaves, so the client may read it first
        wait_for(lambda: host.stats().get("requests_served", 0) >= 2)
        stats = host.stats()
        assert stats["running"] and stats["method:status"] == 1
        assert stats["requests_served"] >= 2 and stats["endpoint"] == info["endpoint"]
        host.stop(timeout=10)
        host.stop(timeout=10)  # twice is fine
        assert not path.exists()
        assert not engine.closed
        assert not host.running
    finally:
        engine.close()


def test_shutdown_request_ends_the_host_wait(data_dir: Path) -> None:
    engine = FakeEngine.open(data_dir)
    host = ServerHost(engine)
    try:
        info = host.start()
        assert not host.wait(0.05)
        with RemoteEngine(info, timeout=5) as remote:
            remote.shutdown()
        assert host.wait(10)
    finally:
        host.stop(timeout=10)
        engine.close()
    assert not connection_file_path(data_dir).exists()


def test_serve_stops_after_the_idle_timeout(data_dir: Path) -> None:
    opened: list[FakeEngine] = []
    ready: list[ConnectionInfo] = []

    def factory(path: Path | None) -> FakeEngine:
        opened.append(FakeEngine.open(path))
        return opened[-1]

    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(serve(
        data_dir, engine_factory=factory, ready=ready.append, idle_timeout=1.0)), daemon=True)
    started = time.monotonic()
    thread.start()
    wait_for(lambda: ready)
    with RemoteEngine(ready[0], timeout=5) as remote:
        for _ in range(3):  # requests keep it alive
            time.sleep(0.4)
            assert remote.ping()["pong"]
    thread.join(20)
    assert result == [0]
    assert time.monotonic() - started >= 2.0
    assert opened[0].closed
    assert not connection_file_path(data_dir).exists()
