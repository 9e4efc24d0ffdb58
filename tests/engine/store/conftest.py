"""The ``backend`` fixture runs a test twice: on the embedded Chroma store and on a real
`chroma run` (the default, vectors in memory, has tests of its own)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    exe = Path(sys.executable).with_name("chroma")
    if not exe.exists():
        found = shutil.which("chroma")
        if not found:
            pytest.fail("the `chroma` command is missing: chromadb is not installed correctly")
        exe = Path(found)
    port = _free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen([str(exe), "run", "--path", str(path), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={"ANONYMIZED_TELEMETRY": "False",
                                                            "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("chroma server exited at start")
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("chroma server did not start in 30 s")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(params=["embedded", "http"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "http":
        url = request.getfixturevalue("chroma_server")
        monkeypatch.setenv("CTX_CHROMA_URL", url)
    else:  # the default keeps vectors in memory; these tests are about Chroma
        monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")
    return str(request.param)
