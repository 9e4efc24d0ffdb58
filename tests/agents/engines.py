"""Helpers for tests that start real ctx processes: run the CLI, stop background engines."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ctx(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """The real `ctx` command (this checkout's code) as a process."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args], input=stdin,
                          capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          check=False, env=full)


def stop_engine(data_dir: str | Path | None = None, timeout: float = 30.0) -> None:
    """Shut down the live server of ``data_dir`` (a background engine a test started)."""
    from ipc.connection import pid_alive
    from ipc.discovery import find_live
    from ipc.remote import RemoteEngine

    info = find_live(data_dir)
    if info is None:
        return
    with contextlib.suppress(Exception), RemoteEngine(info, timeout=5.0, retries=0) as eng:
        eng.shutdown()
    deadline = time.monotonic() + timeout
    while pid_alive(info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(info["pid"]):
        os.kill(info["pid"], 9)
