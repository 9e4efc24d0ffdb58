"""A background engine killed under a waiting `ctx ingest` is noticed at once: the command
says the engine stopped and what the job had stored, instead of waiting out every
call's timeout and retries (25-30 s, then a timeout error naming no cause)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.agents.engines import REPO


def test_ingest_says_at_once_that_its_engine_was_killed(tmp_path: Path) -> None:
    from ipc.discovery import find_live

    data_dir = Path(os.environ["CTX_HOME"])  # where `ctx` keeps the store (no --data-dir)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1500):
        (folder / f"doc{i:04d}.md").write_text(f"# Doc {i}\n\n" + f"Harbour note {i}. " * 150)
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "ingest", str(folder)],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        info = None
        while info is None:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no engine started"
            info = find_live(data_dir)
            time.sleep(0.1)
        time.sleep(0.5)  # let the job store some files
        os.kill(info["pid"], signal.SIGKILL)
        _out, err = proc.communicate(timeout=20)  # before: 25-30 s of timeouts and retries
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, err
    assert "[server_unavailable]" in err and "stopped" in err and "killed" in err, err
    assert "Traceback" not in err
