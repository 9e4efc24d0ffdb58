"""A `chroma run` server on this machine, for a bench or a test: started on a free local
port, waited for until it accepts connections, and stopped (killed if it will not stop)
whatever the caller does meanwhile."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


class ChromaStartError(RuntimeError):
    """The server could not start: the command is missing, it exited, or it never listened."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_exe() -> str:
    exe = Path(sys.executable).with_name("chroma")  # the venv's, beside its python
    if exe.exists():
        return str(exe)
    found = shutil.which("chroma")
    if not found:
        raise ChromaStartError("the `chroma` command is missing: chromadb is not installed "
                               "correctly")
    return found


@contextmanager
def chroma_run(path: Path, wait_s: float = 30.0) -> Iterator[int]:
    """A `chroma run` persisting under ``path`` (made if missing), listening on 127.0.0.1:
    yields its port once it accepts connections (``wait_s`` at most, else
    ``ChromaStartError`` with the end of what it wrote to stderr), and stops it on exit."""
    path.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [_chroma_exe(), "run", "--path", str(path), "--host", "127.0.0.1",
             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=err,
            env={"ANONYMIZED_TELEMETRY": "False", "PATH": "/usr/bin:/bin",
                 "HOME": os.environ.get("HOME", str(path)),
                 "LANG": os.environ.get("LANG", "C.UTF-8")})
        try:
            _wait_listening(proc, port, wait_s, err)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_listening(proc: subprocess.Popen[bytes], port: int, wait_s: float,
                    err: IO[bytes]) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None:
                raise ChromaStartError(f"`chroma run` exited at start ({proc.returncode}): "
                                       f"{_tail(err)}") from None
            time.sleep(0.1)
    raise ChromaStartError(f"`chroma run` did not listen in {wait_s:.0f} s: {_tail(err)}")


def _tail(err: IO[bytes], most: int = 400) -> str:
    """The end of the server's stderr (its own messages about its own start)."""
    try:
        err.seek(0)
        text = err.read().decode("utf-8", "replace")[-most:].strip()
    except (OSError, ValueError):
        return "(stderr unreadable)"
    return text or "(nothing on stderr)"
