"""End to end: real `serve` processes, real sockets, real signals."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ipc.connection import ENV_RUNTIME_DIR, connection_file_path
from ipc.discovery import find_live
from ipc.remote import RemoteEngine, connect
from ipc.wire import validate_result
from tests.ipc.conftest import RawPeer
from tests.ipc.processes import REAL_ENGINE, REPO, ServeProcess, server_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shared_runtime() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ctxrt-"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_RUNTIME_DIR, str(path))
        yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runtime_dir(shared_runtime: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(shared_runtime))
    return shared_runtime


@pytest.fixture(scope="module")
def served(shared_runtime: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Path]]:
    base = tmp_path_factory.mktemp("served")
    proc = ServeProcess(base / "data", shared_runtime, base / "server.log")
    try:
        proc.wait_ready()
        yield proc, base / "data"
    finally:
        proc.kill(signal.SIGTERM)


def _remote(data_dir: Path, **kw: float) -> RemoteEngine:
    remote = connect(data_dir, **kw)  # type: ignore[arg-type]
    assert remote is not None, "no live server found"
    return remote


def test_every_method_through_a_real_server(served: tuple[ServeProcess, Path]) -> None:
    proc, data_dir = served
    with _remote(data_dir, timeout=30) as remote:
        assert remote.ping()["pid"] == proc.pid
        job_id = remote.ingest(text="The ocelot sleeps in the kapok tree at noon.",
                               title="ocelot", wait=True)
        job = remote.job(job_id)
        validate_result("job", job.to_dict())
        assert job.state == "done", job
        hits = remote.search("ocelot kapok", 5)
        validate_result("search", [h.to_dict() for h in hits])
        assert hits and "ocelot" in hits[0].text
        payload = remote.build_context("where does the ocelot sleep?", budget=200)
        validate_result("build_context", payload.to_dict())
        assert 0 < payload.total_tokens <= 200 and payload.budget == 200
        sources = remote.sources()
        validate_result("sources", [s.to_dict() for s in sources])
        assert len(sources) >= 1
        status = remote.status()
        assert status.server is not None and status.server["received"] >= 5
        assert remote.metrics()
        audit = remote.audit(limit=100)
        validate_result("audit", [a.to_dict() for a in audit])
        assert len(audit) >= 1


def test_garbage_leaves_the_store_as_it_was(served: tuple[ServeProcess, Path]) -> None:
    _, data_dir = served
    info = find_live(data_dir)
    assert info is not None
    with _remote(data_dir, timeout=30) as remote:
        before = remote.sources()
        peer = RawPeer(info["endpoint"], info["key"])
        intruder = RawPeer(info["endpoint"], "0" * 64)
        try:
            peer.send([b"\x00" * 40])
            intruder.send(intruder.request("ingest", {"text": "intruder text"})[1])
            assert intruder.recv(10) is not None  # an error reply (signed with the real key)
            peer.send(peer.request("ingest", {"text": "x", "sneaky": True})[1])
            assert peer.recv_reply(10)[1]["error"]["name"] == "invalid_input"
            peer.send(peer.request("delete", {"source": 12})[1])
            assert peer.recv_reply(10)[1]["error"]["name"] == "invalid_input"
        finally:
            peer.close()
            intruder.close()
        assert remote.ping()["pong"]
        assert remote.sources() == before


_CLIENT = """
import json, sys
from pathlib import Path
from ipc.remote import connect
n, calls = int(sys.argv[2]), int(sys.argv[3])
remote = connect(Path(sys.argv[1]), timeout=60)
bad, jobs = 0, []
for i in range(calls):
    budget = 100 + n * 1000 + i
    if remote.build_context(f"process {n} call {i}", budget=budget).budget != budget:
        bad += 1
    if i % 10 == 0:
        jobs.append(remote.ingest(text=f"note from process {n} number {i}", title=f"p{n}-{i}"))
    for job in jobs[-3:]:
        if remote.job(job).id != job:
            bad += 1
print(json.dumps({"bad": bad, "resets": remote.client.resets}))
"""


def test_client_processes_interleave_without_crossed_replies(
        served: tuple[ServeProcess, Path], shared_runtime: Path) -> None:
    _, data_dir = served
    procs = [subprocess.Popen([sys.executable, "-c", _CLIENT, str(data_dir), str(n), "40"],
                              cwd=REPO, env=server_env(shared_runtime),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n in range(6)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
        assert json.loads(out) == {"bad": 0, "resets": 0}


def test_second_server_on_the_same_data_dir_is_refused(served: tuple[ServeProcess, Path],
                                                       shared_runtime: Path,
                                                       tmp_path: Path) -> None:
    first, data_dir = served
    before = connection_file_path(data_dir).read_bytes()
    second = ServeProcess(data_dir, shared_runtime, tmp_path / "second.log")
    try:
        assert second.wait(120) == 4
    finally:
        second.kill()
    assert second.error_json()["name"] == "store_locked"
    assert connection_file_path(data_dir).read_bytes() == before
    with _remote(data_dir, timeout=30) as remote:
        assert remote.ping()["pid"] == first.pid


def test_sigterm_and_shutdown_exit_cleanly(shared_runtime: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = ServeProcess(data_dir, shared_runtime, tmp_path / "a.log")
    again: ServeProcess | None = None
    try:
        info = proc.wait_ready()
        socket_path = Path(info["endpoint"].removeprefix("ipc://"))
        assert connection_file_path(data_dir).exists()
        assert proc.kill(signal.SIGTERM) == 0, proc.stderr()
        assert not connection_file_path(data_dir).exists()
        if info["transport"] == "ipc":
            assert not socket_path.exists()
        # the lock was released: a new server opens the same data dir, then stops on request
        again = ServeProcess(data_dir, shared_runtime, tmp_path / "b.log")
        again.wait_ready()
        with _remote(data_dir, timeout=30) as remote:
            assert remote.shutdown() == {"stopping": True}
        assert again.wait(60) == 0, again.stderr()
        assert find_live(data_dir) is None
    finally:
        for server in (proc, again):
            if server is not None:
                server.kill()


def test_sigkill_and_restart_while_a_client_retries(shared_runtime: Path,
                                                    tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    servers = [ServeProcess(data_dir, shared_runtime, tmp_path / "first.log")]
    try:
        _kill_and_restart(servers, data_dir, shared_runtime, tmp_path)
    finally:
        for proc in servers:
            proc.kill()


def _kill_and_restart(servers: list[ServeProcess], data_dir: Path, shared_runtime: Path,
                      tmp_path: Path) -> None:
    first = servers[0]
    first.wait_ready()
    remote = _remote(data_dir, timeout=0.5, retries=100)
    remote.ingest(text="The okapi lives in the Ituri forest.", title="okapi", wait=True)
    results: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def hammer() -> None:
        i = 0
        while not stop.is_set():
            try:
                results.append(remote.build_context(f"okapi {i}", budget=150 + i).budget
                               - 150 - i)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)
                return
            i += 1

    thread = threading.Thread(target=hammer, daemon=True)
    thread.start()
    try:
        _wait(lambda: len(results) >= 3)
        assert first.kill(signal.SIGKILL) == -signal.SIGKILL
        assert find_live(data_dir) is None  # the stale file is recognised and removed
        assert not connection_file_path(data_dir).exists()
        done_before = len(results)
        time.sleep(1.0)  # the client times out and retries against nothing
        second = ServeProcess(data_dir, shared_runtime, tmp_path / "second.log")
        servers.append(second)
        second.wait_ready()
        _wait(lambda: len(results) >= done_before + 3 or bool(errors), timeout=60)
    finally:
        stop.set()
        thread.join(30)
    assert errors == []
    assert set(results) == {0}  # every reply answered its own request
    assert remote.client.resets >= 1
    assert remote.info["pid"] == second.pid
    if REAL_ENGINE:
        assert any("okapi" in json.dumps(s.to_dict()) for s in remote.sources())
    remote.shutdown()
    remote.close()
    assert second.wait(60) == 0


def _wait(predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


_SIGNAL_AT_READY = """
import os, signal, sys
from ipc import serve
start = serve.ServerHost.start
def start_then_signalled(self):
    info = start(self)  # the connection file is out: a supervisor may stop it now
    os.kill(os.getpid(), signal.SIGTERM)
    return info
serve.ServerHost.start = start_then_signalled
sys.exit(serve.main(sys.argv[1:]))
"""


def test_a_sigterm_as_soon_as_the_connection_file_is_out(shared_runtime: Path,
                                                          tmp_path: Path) -> None:
    """The connection file says "ready": a SIGTERM right then stops the server cleanly
    (exit 0, the file removed), not by the signal's default action (-15, the file
    left behind for clients to find a dead server by)."""
    data_dir = tmp_path / "data"
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_AT_READY, "--data-dir", str(data_dir)],
                          cwd=REPO, env=server_env(shared_runtime), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not connection_file_path(data_dir).exists()
