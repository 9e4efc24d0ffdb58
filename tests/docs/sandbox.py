"""A clean machine for one doc file's blocks: what a new user has after `make setup`.

A fresh HOME (XDG dirs under it), its own runtime dir, no CTX_* settings, the venv's
`ctx` on PATH, an OS keychain (a real ``keyring`` backend in a file: the user's own is
never touched), the real model, and a copy of the checkout's README.md and docs/ as the
working directory (with ``.venv`` linked), so that a block may write where it stands.

Shell blocks run one after the other in bash (``set -euo pipefail``); what a block
exports (``export PATH=...``) carries to the next, as in one terminal. Python blocks
run with the venv's python; ``sys.argv[1]`` is the running engine's connection file
(docs/wire.md's pyzmq client reads it), and an engine is started (`ctx serve`) first
when none runs. Every engine a file's blocks started is stopped at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.docs.blocks import REPO, SHELL, Block
from tests.keyring_file import BACKEND, ENV

BLOCK_TIMEOUT_S = 300


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.run_dir = root / "run"
        self.cwd = root / "checkout"
        self.state = root / "exports.sh"
        for d in (self.home, self.cwd):
            d.mkdir(parents=True)
        self.run_dir.mkdir(mode=0o700)
        shutil.copy2(REPO / "README.md", self.cwd / "README.md")
        shutil.copytree(REPO / "docs", self.cwd / "docs",
                        ignore=shutil.ignore_patterns("screenshots"))
        (self.cwd / ".venv").symlink_to(Path(sys.prefix))
        self.state.write_text("")
        self.serve: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM", "SYSTEMROOT")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(HOME=str(self.home), XDG_RUNTIME_DIR=str(self.run_dir),
                   PATH=f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                   PYTHONPATH=str(REPO),  # this checkout's code, as `make setup` installs it
                   PYTHON_KEYRING_BACKEND=BACKEND, HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", QT_QPA_PLATFORM="offscreen")
        env[ENV] = str(self.root / "keychain.json")
        return env

    def run(self, block: Block) -> subprocess.CompletedProcess[str]:
        if block.lang in SHELL:
            return self._shell(block)
        return self._python(block)

    def _shell(self, block: Block) -> subprocess.CompletedProcess[str]:
        state = shlex.quote(str(self.state))
        script = (f"set -euo pipefail\n. {state}\n{block.commands()}\n"
                  f"export -p > {state}.new && mv {state}.new {state}\n")
        return subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env(),
                              capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL)

    def _python(self, block: Block) -> subprocess.CompletedProcess[str]:
        conn = self.connection_file() or self._start_engine()
        script = self.root / f"block-{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        return subprocess.run([sys.executable, str(script), str(conn)], cwd=self.cwd,
                              env=self.env(), capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)

    def connection_file(self) -> Path | None:
        """The live engine's connection file in this sandbox's runtime dir, if any."""
        for path in sorted((self.run_dir / "ctx").glob("ctx-*.json")):
            with contextlib.suppress(OSError, ValueError):
                pid = int(json.loads(path.read_text())["pid"])
                os.kill(pid, 0)
                return path
        return None

    def _start_engine(self) -> Path:
        log = self.root / "serve.log"
        with log.open("wb") as out:
            self.serve = subprocess.Popen(["ctx", "serve"], cwd=self.cwd, env=self.env(),
                                          stdout=subprocess.DEVNULL, stderr=out)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = self.connection_file()
            if found is not None and self._answers():
                return found
            if self.serve.poll() is not None:
                raise AssertionError(f"ctx serve could not start: {log.read_text()}")
            time.sleep(0.2)
        raise AssertionError("ctx serve did not start within 120 s")

    def _answers(self) -> bool:
        code = "import sys\nfrom ipc.remote import connect\nsys.exit(0 if connect() else 1)\n"
        return subprocess.run([sys.executable, "-c", code], env=self.env(), cwd=self.cwd,
                              capture_output=True, timeout=60, check=False).returncode == 0

    def stop(self) -> None:
        """Stop every engine the blocks started (a background one, or our `ctx serve`)."""
        code = ("import sys\nfrom tests.agents.engines import stop_engine\n"
                "for d in sys.argv[1:]:\n    stop_engine(d)\n")
        dirs = {str(self.home / ".local" / "share" / "ctx")}
        for path in (self.run_dir / "ctx").glob("ctx-*.json"):
            with contextlib.suppress(OSError, ValueError):
                dirs.add(json.loads(path.read_text())["data_dir"])
        subprocess.run([sys.executable, "-c", code, *sorted(dirs)], env=self.env(),
                       cwd=REPO, timeout=120, check=False, capture_output=True)
        if self.serve is not None:
            if self.serve.poll() is None:
                self.serve.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.serve.wait(30)
            if self.serve.poll() is None:
                self.serve.kill()
                self.serve.wait(30)
