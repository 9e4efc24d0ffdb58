"""Ingest and search open no socket to a non-loopback address, and telemetry is off."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Any

import pytest

from engine.embedding.base import Embedder
from engine.facade import ContextEngine


def _is_loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):
        return True  # AF_UNIX path
    if not isinstance(address, tuple):
        return False
    host = str(address[0])
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["memory", "embedded"])
def test_no_outside_connections(backend: str, tmp_path: Path, data_dir: Path, minilm: Embedder,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", backend)
    attempts: list[object] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: tuple[Any, ...] | str | bytes) -> None:
        attempts.append(address)
        if not _is_loopback(address):
            raise OSError("test: outside connection blocked")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: tuple[Any, ...] | str | bytes) -> int:
        attempts.append(address)
        if not _is_loopback(address):
            return 111
        return real_connect_ex(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in (None, "localhost", "127.0.0.1", "::1"):
            attempts.append(("dns", host))
            raise OSError("test: DNS lookup blocked")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(5):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\n\nParagraph {i} about rivers and bridges.\n")
    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    with ContextEngine.open(data_dir, embedder=minilm) as eng:
        assert eng.wait(eng.ingest(paths=[str(docs)])).state == "done"
        assert eng.search("bridges over rivers", k=3)
        eng.build_context("bridges", budget=200)
        if backend == "embedded":
            settings = eng.rt.vectors._client.get_settings()  # type: ignore[attr-defined]
            assert settings.anonymized_telemetry is False
    outside = [a for a in attempts if not _is_loopback(a)]
    assert outside == []


def test_import_engine_turns_every_library_switch_off(tmp_path: Path) -> None:
    """``import engine`` sets each library's offline and no-telemetry switch, over whatever
    the caller's environment said, before any library loads (onnxruntime reads its
    switch once, when it creates its environment)."""
    import json
    import os
    import subprocess
    import sys

    from engine.offline import SWITCHES

    hostile = {name: "0" for name in SWITCHES}
    env = {**{k: v for k, v in os.environ.items() if k not in SWITCHES}, **hostile,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    code = ("import json, os, sys\nimport engine\n"
            "print(json.dumps({n: os.environ.get(n) for n in json.loads(sys.argv[1])}))\n"
            "print(json.dumps(sorted(m for m in ('onnxruntime', 'chromadb', 'transformers') "
            "if m in sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(list(SWITCHES))], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    seen, loaded = (json.loads(line) for line in done.stdout.splitlines())
    assert seen == SWITCHES
    assert loaded == []  # nothing loaded before the switches were set
    assert SWITCHES["ORT_DISABLE_TELEMETRY"] == "1"
    assert SWITCHES["ANONYMIZED_TELEMETRY"] == "False"
