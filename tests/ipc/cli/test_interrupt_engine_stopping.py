"""Ctrl-C of a `ctx` command that follows a job of the background engine, when the same
Ctrl-C stops the engine too (a terminal's process group, as `make run` starts both):
the engine cancels its jobs itself as it stops (ipc/serve.py), so the command says
that, instead of the false alarm "the jobs could not be cancelled (ServerUnavailable)"
after the whole IPC timeout (which held `make run`'s Ctrl-C for 10 s, issue 32)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from ipc.cli.commands import _interrupted
from ipc.remote import connect
from tests.ipc.cli.test_keep_cli import _ctx
from tests.ipc.processes import ServeProcess


def test_an_engine_stopped_by_the_same_ctrl_c_is_not_a_failed_cancel(
        tmp_path: Path, runtime_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / "data"
    assert _ctx(runtime_dir, data_dir, "init", "--no-keychain").returncode == 0
    server = ServeProcess(data_dir, runtime_dir, tmp_path / "serve.log")
    try:
        server.wait_ready()
        remote = connect(data_dir)
        assert remote is not None
        job = remote.ingest(text="the ferry leaves at nine", title="ferry", wait=False)
        assert server.kill(signal.SIGINT) == 0  # the Ctrl-C the engine got as well
        try:
            code = _interrupted(remote, [job], as_json=False)
        finally:
            remote.close()
    finally:
        server.kill(signal.SIGKILL)
    said = capsys.readouterr().err
    assert code == 130
    assert "could not be cancelled" not in said, said
    assert "the background engine stopped too" in said, said
