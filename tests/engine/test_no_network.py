"""Ingest and search open no socket to a non-loopback address, and telemetry is off."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import pytest

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
def test_no_outside_connections(tmp_path: Path, data_dir: Path, minilm: object,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> object:
        attempts.append(address)
        if not _is_loopback(address):
            raise OSError("test: outside connection blocked")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: object) -> int:
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
    with ContextEngine.open(data_dir, embedder=minilm) as eng:  # type: ignore[arg-type]
        assert eng.wait(eng.ingest(paths=[str(docs)])).state == "done"
        assert eng.search("bridges over rivers", k=3)
        eng.build_context("bridges", budget=200)
        settings = eng.rt.vectors._client.get_settings()
        assert settings.anonymized_telemetry is False
    outside = [a for a in attempts if not _is_loopback(a)]
    assert outside == []
