"""Connection files: owner-only, atomic, found when live, removed when stale."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipc.connection import (
    ENV_RUNTIME_DIR,
    connection_file_path,
    data_dir_tag,
    default_endpoint,
    make_info,
    pid_alive,
    read_connection_file,
    remove_connection_file,
    runtime_dir,
    write_connection_file,
)
from ipc.discovery import find_live
from ipc.errors import ProtocolError
from ipc.wire import PROTOCOL_VERSION

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and sockets")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _info(data_dir: Path, pid: int | None = None, endpoint: str = "tcp://127.0.0.1:5555"):
    info = make_info(endpoint, "ab" * 32, data_dir)
    if pid is not None:
        info["pid"] = pid
    return info


def test_file_lives_in_the_runtime_dir_named_by_data_dir(runtime_dir: Path,
                                                          data_dir: Path) -> None:
    path = connection_file_path(data_dir)
    assert path.parent == runtime_dir.resolve()
    assert path.name == f"ctx-{data_dir_tag(data_dir)}.json"
    assert data_dir_tag(data_dir) != data_dir_tag(data_dir / "other")
    assert len(data_dir_tag(data_dir)) == 16


@posix_only
def test_written_owner_only_and_atomically(data_dir: Path) -> None:
    info = _info(data_dir)
    path = write_connection_file(info)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_connection_file(path) == info
    assert json.loads(path.read_text())["protocol_version"] == PROTOCOL_VERSION
    info2 = dict(info, key="cd" * 32)
    write_connection_file(info2, path)  # type: ignore[arg-type]
    assert read_connection_file(path)["key"] == "cd" * 32
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


@posix_only
def test_runtime_dir_is_made_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(loose))
    assert runtime_dir() == loose.resolve()
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_unusable_runtime_dir_falls_back_to_data_dir(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path, data_dir: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(blocker))
    assert runtime_dir() is None
    data_dir.mkdir()
    assert connection_file_path(data_dir).parent == data_dir.resolve()
    path = write_connection_file(_info(data_dir))
    assert path.parent == data_dir.resolve()
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(tmp_path / "usable-again"))
    assert find_live(data_dir) is not None  # still found in the fallback place


@posix_only
def test_default_endpoint_is_an_ipc_socket_or_tcp_when_too_long(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path) -> None:
    endpoint = default_endpoint(data_dir)
    assert endpoint == "ipc://" + str(connection_file_path(data_dir).with_suffix(".sock"))
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(deep))
    assert default_endpoint(data_dir) == "tcp://127.0.0.1:*"


def test_find_live_returns_the_live_server(data_dir: Path) -> None:
    assert find_live(data_dir) is None
    info = _info(data_dir)
    write_connection_file(info)
    assert find_live(data_dir) == info


def test_stale_file_of_a_dead_pid_is_removed(data_dir: Path) -> None:
    path = write_connection_file(_info(data_dir, pid=_dead_pid()))
    assert find_live(data_dir) is None
    assert not path.exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")
def test_zombie_counts_as_dead(data_dir: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat_file = Path(f"/proc/{proc.pid}/stat")
        for _ in range(200):
            if stat_file.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                break
            time.sleep(0.05)
        assert not pid_alive(proc.pid)
    finally:
        proc.wait()


@posix_only
def test_stale_file_whose_socket_vanished_is_removed(data_dir: Path, runtime_dir: Path) -> None:
    path = write_connection_file(_info(data_dir, endpoint=f"ipc://{runtime_dir}/gone.sock"))
    assert find_live(data_dir) is None
    assert not path.exists()


def test_malformed_file_is_removed_and_foreign_one_ignored(data_dir: Path) -> None:
    path = connection_file_path(data_dir)
    path.write_text("{not json")
    assert find_live(data_dir) is None
    assert not path.exists()
    write_connection_file(_info(data_dir / "elsewhere"), path)
    assert find_live(data_dir) is None
    assert path.exists()  # not ours to judge


@pytest.mark.parametrize("content", [
    "[]", '{"endpoint": "x"}', json.dumps({"endpoint": "tcp://x", "key": "k", "pid": True,
                                           "protocol_version": "1.0", "transport": "tcp",
                                           "data_dir": "/x"}),
    json.dumps({"endpoint": "tcp://x", "key": "k", "pid": 1, "protocol_version": "1.0",
                "transport": "udp", "data_dir": "/x"}),
    "x" * 70_000,
])
def test_read_rejects_malformed(tmp_path: Path, content: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(ProtocolError):
        read_connection_file(path)


def test_remove_only_own_file(data_dir: Path) -> None:
    path = write_connection_file(_info(data_dir))
    assert not remove_connection_file(path, pid=os.getpid() + 1)
    assert path.exists()
    assert remove_connection_file(path, pid=os.getpid())
    assert not remove_connection_file(path)


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(os.getppid())
    assert not pid_alive(_dead_pid())
    assert not pid_alive(0)
    assert not pid_alive(-5)
