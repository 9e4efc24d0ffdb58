"""One app per data dir: a second launch hands its request to the first one.

The first app listens on a QLocalServer named after the data dir (owner-only
socket). A later launch connects, sends one JSON line ({"cmd": "show"},
{"cmd": "ingest", "paths": [...]}, {"cmd": "status"} or {"cmd": "quit"}) and
reads one JSON line back, instead of failing on the store lock. A quitting app
answers ``{"stopping": true}`` until it is gone, and the later launch waits for
that, then starts. A socket left behind by a killed app is removed and listened
on again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop.qt import QLocalServer, QLocalSocket, QObject

log = logging.getLogger("ctx.desktop.instance")

MAX_MESSAGE = 64 * 1024
Handler = Callable[[dict[str, Any]], dict[str, Any]]


def server_name(data_dir: Path) -> str:
    """The local socket name for ``data_dir`` (per user: the uid where there is one)."""
    tag = hashlib.sha256(str(Path(data_dir).resolve()).encode("utf-8", "surrogatepass")
                         ).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return f"ctx-app-{uid}-{tag}"


def _wait(step: Callable[[int], bool], deadline: float, sock: QLocalSocket) -> bool:
    """Call a blocking Qt wait in short slices until it succeeds, the socket fails or
    ``deadline`` passes.

    Short slices let other Python threads (a GUI thread in the same process) run
    between them, since a blocking Qt wait may hold the GIL.
    """
    while True:
        if step(20):
            return True
        if time.monotonic() >= deadline or (
                sock.state() == QLocalSocket.LocalSocketState.UnconnectedState):
            return False


def send(data_dir: Path, message: dict[str, Any], timeout_ms: int = 3000
         ) -> dict[str, Any] | None:
    """Send ``message`` to the app running on ``data_dir``; its reply, or None if none runs."""
    deadline = time.monotonic() + timeout_ms / 1000
    sock = QLocalSocket()
    sock.connectToServer(server_name(data_dir))
    if not _wait(sock.waitForConnected, min(deadline, time.monotonic() + 1.0), sock):
        sock.abort()
        return None
    try:
        sock.write(json.dumps(message).encode("utf-8") + b"\n")

        def flushed(ms: int) -> bool:
            if sock.bytesToWrite():
                sock.waitForBytesWritten(ms)
            return not sock.bytesToWrite()
        _wait(flushed, deadline, sock)
        data = b""
        while not data.endswith(b"\n") and len(data) <= MAX_MESSAGE:
            if not sock.bytesAvailable() and not _wait(sock.waitForReadyRead, deadline, sock):
                data += bytes(sock.readAll().data())  # what came with the disconnect
                break
            data += bytes(sock.readAll().data())
        try:
            reply = json.loads(data.decode("utf-8")) if data.strip() else None
        except ValueError:
            reply = None
        if reply is None and not data:
            return {"ok": False, "error": "no reply from the running app"}
        return reply if isinstance(reply, dict) else {"ok": False, "error": "bad reply"}
    finally:
        sock.abort()


def wait_until_gone(data_dir: Path, timeout_s: float = 120.0) -> bool:
    """Wait for the app on ``data_dir`` (quitting) to stop answering; False on timeout.

    A quitting app answers until its engine is closed and its store unlocked, so
    the launch that waited here opens the store without meeting its lock.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reply = send(data_dir, {"cmd": "status"}, timeout_ms=1000)
        if reply is None:
            return True
        time.sleep(0.1)
    return False


class InstanceServer(QObject):
    """Answers later launches with ``handler(message) -> reply`` on the GUI thread."""

    def __init__(self, data_dir: Path, handler: Handler, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = server_name(data_dir)
        self.handler = handler
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        self._buffers: dict[QLocalSocket, bytes] = {}

    def listen(self) -> bool:
        """Listen; a stale socket (a killed app) is removed first. False if it cannot."""
        if self.server.listen(self.name):
            return True
        QLocalServer.removeServer(self.name)
        if self.server.listen(self.name):
            return True
        log.warning("single-instance socket unavailable: %s", self.server.errorString())
        return False

    def close(self) -> None:
        self.server.close()

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            sock = self.server.nextPendingConnection()
            self._buffers[sock] = b""
            sock.readyRead.connect(lambda s=sock: self._read(s))
            sock.disconnected.connect(lambda s=sock: self._drop(s))

    def _drop(self, sock: QLocalSocket) -> None:
        self._buffers.pop(sock, None)
        sock.deleteLater()

    def _read(self, sock: QLocalSocket) -> None:
        data = self._buffers.get(sock, b"") + bytes(sock.readAll().data())
        if len(data) > MAX_MESSAGE:
            self._reply(sock, {"ok": False, "error": "message too large"})
            return
        self._buffers[sock] = data
        if not data.endswith(b"\n"):
            return
        try:
            message = json.loads(data.decode("utf-8"))
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self._reply(sock, {"ok": False, "error": "malformed message"})
            return
        try:
            reply = self.handler(message)
        except Exception as exc:  # the other launch gets the error
            log.exception("single-instance handler failed")
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        self._reply(sock, reply)

    def _reply(self, sock: QLocalSocket, reply: dict[str, Any]) -> None:
        self._buffers[sock] = b""
        sock.write(json.dumps(reply).encode("utf-8") + b"\n")
        sock.flush()
        sock.disconnectFromServer()
