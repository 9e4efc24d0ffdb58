"""serve() in process: connection file life cycle, ready callback, clean stop."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def test_a_stop_asked_mid_job_stops_the_job_at_a_safe_point(data_dir: Path,
                                                            tmp_path: Path) -> None:
    """Ctrl-C (or shutdown) on a server whose ingest is in its vector stage stops the job
    at a safe point, as the app's quit does: the server ends without first embedding
    the rest (which a real model on a busy machine spends minutes on), the job ends
    "cancelled", every file stays stored and the next start resumes the vectors."""
    from engine.api import Event, JobChanged
    from engine.facade import ContextEngine

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(4):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\n" + f"Tide table {i}. " * 200)
    held = threading.Event()
    ended: list[str] = []

    def factory(path: Path | None) -> ContextEngine:
        engine = ContextEngine.open(path)

        def listen(event: Event) -> None:
            if not isinstance(event, JobChanged) or event.job.kind != "paths":
                return
            if event.job.stage == "vectors" and not held.is_set():
                engine.pause_ingestion()  # hold it in its vector stage
                held.set()
            if event.job.final:
                ended.append(event.job.state)
        engine.subscribe(listen)
        return engine

    ready: list[ConnectionInfo] = []
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(
        serve(data_dir, engine_factory=factory, ready=ready.append)), daemon=True)
    thread.start()
    wait_for(lambda: ready, timeout=60)
    with RemoteEngine(ready[0], timeout=30) as remote:
        remote.ingest(paths=[str(folder)])
        assert held.wait(60)
        assert remote.shutdown() == {"stopping": True}
    thread.join(60)
    assert result == [0]
    assert ended == ["cancelled"]  # stopped, not run to its end first
    again = ContextEngine.open(data_dir)
    try:
        assert len(again.sources()) == 4  # what the job stored stays
    finally:
        again.close()


def test_a_signal_only_raises_a_flag_and_the_loop_stops(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler a signal runs takes no lock (it runs inside whatever the main thread
    was doing, maybe inside a lock, and a second signal may land inside the first's: an
    Event.set there once waited for its own lock for ever, so `make run` hung on
    Ctrl-C); the serving loop sees the flag and stops cleanly."""
    import ipc.serve as serve_module

    handlers: list[Callable[[], None]] = []
    real = serve_module._stop_on_signals

    def spy(stop: Callable[[], None]) -> Any:
        handlers.append(stop)
        return real(stop)

    monkeypatch.setattr(serve_module, "_stop_on_signals", spy)
    ready: list[ConnectionInfo] = []
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(
        serve(data_dir, engine_factory=FakeEngine.open, ready=ready.append)), daemon=True)
    thread.start()
    wait_for(lambda: ready)

    def no_lock(*_args: object, **_kw: object) -> None:
        raise AssertionError("a signal handler took a lock")

    with monkeypatch.context() as m:  # what a handler landing inside a held lock must not do
        m.setattr(threading.Event, "set", no_lock)
        m.setattr(serve_module.ServerHost, "request_stop", no_lock)
        handlers[0]()
        handlers[0]()  # a second signal, inside or after the first
    thread.join(15)
    assert result == [0]
    assert not connection_file_path(data_dir).exists()
