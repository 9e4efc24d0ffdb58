"""Real processes: a stale connection file whose pid was reused, and a non-loopback bind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipc.connection import (
    connection_file_path,
    make_info,
    process_started,
    read_connection_file,
    write_connection_file,
)
from ipc.discovery import find_live
from tests.ipc.processes import REPO, ServeProcess, server_env

pytestmark = pytest.mark.slow


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """Another live process, whose pid a stale connection file will name."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc
    proc.kill()
    proc.wait(10)


def test_process_start_tells_two_processes_apart(sleeper: subprocess.Popen[bytes]) -> None:
    ours, theirs = process_started(sleeper.pid), process_started(sleeper.pid)
    assert ours is not None and ours == theirs
    assert process_started(sleeper.pid) != make_info("ipc:///x", "k" * 64, None).get("started")


@pytest.mark.parametrize("token", ["another process's", "same pid, started earlier"])
def test_a_file_naming_a_reused_pid_is_stale(data_dir: Path, sleeper: subprocess.Popen[bytes],
                                             token: str) -> None:
    info = make_info("ipc:///nonexistent/ctx.sock", "k" * 64, data_dir)
    info["pid"], info["endpoint"] = sleeper.pid, "tcp://127.0.0.1:9"  # our start token, its pid
    if token == "same pid, started earlier":
        if not sys.platform.startswith("linux"):
            pytest.skip("the token's layout is read on Linux only")
        head, ticks = str(process_started(sleeper.pid)).rsplit(":", 1)
        info["started"] = f"{head}:{int(ticks) - 1}"
    path = write_connection_file(info)
    assert find_live(data_dir) is None
    assert not path.exists()


def test_a_file_without_start_time_is_pinged(data_dir: Path,
                                             sleeper: subprocess.Popen[bytes]) -> None:
    info = make_info("tcp://127.0.0.1:9", "k" * 64, data_dir)
    del info["started"]
    info["pid"] = sleeper.pid
    path = write_connection_file(info)
    assert find_live(data_dir, probe_timeout=0.3) is None
    assert path.exists()  # perhaps a slow server: skipped, not removed
    assert "started" not in read_connection_file(path)


def test_ctx_status_opens_the_store_when_the_files_pid_was_reused(
        tmp_path: Path, runtime_dir: Path) -> None:
    data_dir = tmp_path / "data"
    server = ServeProcess(data_dir, runtime_dir, tmp_path / "server.log")
    info = server.wait_ready()
    assert server.kill(signal.SIGKILL) != 0
    path = connection_file_path(data_dir)
    assert read_connection_file(path)["started"] == info["started"]  # left behind
    # the killed server's pid now names another process, started after it died
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        _status_opens_the_store(data_dir, runtime_dir, path, dict(info, pid=other.pid))
    finally:
        other.kill()
        other.wait(10)


def _status_opens_the_store(data_dir: Path, runtime_dir: Path, path: Path,
                            stale: dict[str, object]) -> None:
    write_connection_file(stale, path)  # type: ignore[arg-type]
    done = subprocess.run(
        [sys.executable, "-m", "ipc.cli.main", "--data-dir", str(data_dir), "status", "--json"],
        cwd=REPO, env=server_env(runtime_dir), capture_output=True, text=True, timeout=120,
        check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    status = json.loads(done.stdout)["status"]
    assert status["served"] is False
    assert not path.exists()


@pytest.mark.parametrize("endpoint", ["tcp://0.0.0.0:*", "tcp://*:0"])
def test_serve_refuses_a_non_loopback_endpoint(tmp_path: Path, runtime_dir: Path,
                                               endpoint: str) -> None:
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-m", "ipc.serve", "--data-dir", str(data_dir), "--endpoint", endpoint],
        cwd=REPO, env=server_env(runtime_dir), capture_output=True, text=True, timeout=120,
        check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith('{"error"')]
    error = json.loads(lines[-1])["error"]
    assert (error["code"], error["name"]) == (1001, "config_invalid")
    assert error["details"] == {"key": "ipc.endpoint", "reason": "not_loopback"}
    assert endpoint not in error["message"]
    assert find_live(data_dir) is None
    assert not connection_file_path(data_dir).exists()
