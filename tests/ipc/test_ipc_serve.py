"""serve() in process: connection file life cycle, ready callback, clean stop."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from engine.errors import StoreLocked
from ipc.connection import ConnectionInfo, connection_file_path
from ipc.discovery import find_live
from ipc.remote import RemoteEngine
from ipc.serve import serve
from tests.ipc.conftest import wait_for
from tests.ipc.fake_engine import FakeEngine


def test_serve_writes_the_file_serves_and_cleans_up(data_dir: Path) -> None:
    opened: list[FakeEngine] = []
    ready: list[ConnectionInfo] = []

    def factory(path: Path | None) -> FakeEngine:
        opened.append(FakeEngine.open(path))
        return opened[-1]

    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(
        serve(data_dir, engine_factory=factory, ready=ready.append)), daemon=True)
    thread.start()
    wait_for(lambda: ready)
    info = ready[0]
    path = connection_file_path(data_dir)
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert find_live(data_dir) == info
    assert info["pid"] == os.getpid() and len(info["key"]) == 64
    with RemoteEngine(info, timeout=5) as remote:
        assert remote.ping()["pong"]
        with pytest.raises(StoreLocked):  # the data dir is taken while serving
            serve(data_dir, engine_factory=FakeEngine.open)
        assert remote.shutdown() == {"stopping": True}
    thread.join(15)
    assert result == [0]
    assert not path.exists()
    assert opened[0].closed


def test_each_start_gets_a_new_key(data_dir: Path) -> None:
    keys = []
    for _ in range(2):
        ready: list[ConnectionInfo] = []
        thread = threading.Thread(target=serve, args=(data_dir,), kwargs={
            "engine_factory": FakeEngine.open, "ready": ready.append}, daemon=True)
        thread.start()
        wait_for(lambda: ready)  # noqa: B023 - read within this iteration
        keys.append(ready[0]["key"])
        with RemoteEngine(ready[0], timeout=5) as remote:
            remote.shutdown()
        thread.join(15)
    assert keys[0] != keys[1]
