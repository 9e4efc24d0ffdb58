"""Start real `serve` processes for end-to-end tests.

They serve the real ContextEngine (with the deterministic fake embedder, so no
model is loaded, and a passphrase-wrapped key). ``CTX_TEST_IPC_ENGINE=fake``
serves the in-test fake engine instead, through the same ``ipc.serve.main``:
useful to test the wire while the engine is broken or being changed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ipc.connection import ConnectionInfo
from ipc.discovery import find_live

REPO = Path(__file__).resolve().parents[2]
PASSPHRASE = "ipc-test-passphrase"


REAL_ENGINE = os.environ.get("CTX_TEST_IPC_ENGINE", "real") != "fake"

_FAKE_SERVE = (
    "import sys; from ipc.serve import main; from tests.ipc.fake_engine import FakeEngine; "
    "sys.exit(main(sys.argv[1:], engine_factory=FakeEngine.open))"
)


def server_env(runtime: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CTX_HOME", None)
    env.update({"CTX_RUNTIME_DIR": str(runtime), "CTX_EMBEDDER": "fake",
                "CTX_PASSPHRASE": PASSPHRASE, "PYTHONPATH": str(REPO)})
    return env


class ServeProcess:
    """One `serve` process for ``data_dir``; stderr goes to a file for diagnosis."""

    def __init__(self, data_dir: Path, runtime: Path, log: Path) -> None:
        self.data_dir = data_dir
        self.log_path = log
        if REAL_ENGINE:
            cmd = [sys.executable, "-m", "ipc.serve", "--data-dir", str(data_dir)]
        else:
            cmd = [sys.executable, "-c", _FAKE_SERVE, "--data-dir", str(data_dir)]
        self._log = open(log, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=server_env(runtime),
                                     stdout=subprocess.DEVNULL, stderr=self._log)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 60.0) -> ConnectionInfo:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.stderr()}")
            info = find_live(self.data_dir)
            if info is not None and info["pid"] == self.proc.pid:
                return info
            time.sleep(0.05)
        self.kill()  # a test that gives up on the server must not leave it running
        raise AssertionError(f"server not ready in {timeout} s: {self.stderr()}")

    def stderr(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self, sig: int = signal.SIGKILL) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait()

    def wait(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.returncode is not None:
                self._log.close()

    def error_json(self) -> dict:
        lines = [ln for ln in self.stderr().splitlines() if ln.startswith('{"error"')]
        return json.loads(lines[-1])["error"] if lines else {}
