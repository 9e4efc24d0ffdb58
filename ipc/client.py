"""The blocking client: one REQ socket, a timeout on every call, lazy-pirate retries.

A REQ socket that missed its reply is stuck (it may not send again), so after a
timeout the client closes it (LINGER 0) and opens a fresh one before retrying,
as ZeroMQ's "lazy pirate" pattern and jupyter_client's channels do. Each
attempt is a new message with a new ``msg_id`` (the server refuses replays).
Replies are verified (signature, version, date, ``parent``); error replies are
raised as the engine's own exception classes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Self

import zmq

from engine import CtxError, error_from_dict
from ipc.connection import ConnectionInfo, pid_alive
from ipc.endpoints import needs_ipv6
from ipc.errors import (
    BadSignature,
    IpcTimeout,
    KeyMismatch,
    MessageTooLarge,
    ProtocolError,
    ServerUnavailable,
)
from ipc.session import Message, Rejected, Session
from ipc.wire import IpcConfig, method_spec, validate_params, version_compatible

__all__ = ["Client"]


class _Gone(Exception):
    """The server's process ended while an attempt waited for its reply."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.pid = pid

_DEFAULTS = IpcConfig()
LIVENESS_S = 0.25  # while waiting for a reply, how often the server's process is looked at


class Client:
    """Calls methods on the server described by ``info``.

    ``timeout`` is per attempt, in seconds; ``retries`` is how many extra
    attempts an idempotent method gets after a timeout (ingest, delete and
    shutdown get none unless a call asks, since the server may have acted on
    the lost request). Thread-safe: calls from several threads are serialized
    on the one socket; use one client per thread for parallel calls.

    ``rediscover`` (``ipc.discovery.find_live`` of the data dir, as RemoteEngine
    passes it; None: never) is asked for fresh connection info before each
    retry, so a client outlives a server restart: a restarted server has a new
    key (and on TCP a new port). A reply
    that cannot be verified comes from a server holding another key (the
    restarted one refusing a request signed with the old key); the client
    then reads the connection info again and, if the key changed, sends the
    request once more (safe for every method: a server that cannot verify a
    request does not act on it). Otherwise it raises KeyMismatch (2009).
    """

    def __init__(self, info: ConnectionInfo, *, timeout: float = _DEFAULTS.timeout_s,
                 retries: int = _DEFAULTS.retries,
                 max_message_bytes: int = _DEFAULTS.max_message_bytes,
                 rediscover: Callable[[], ConnectionInfo | None] | None = None,
                 context: zmq.Context[zmq.Socket[bytes]] | None = None) -> None:
        IpcConfig(timeout_s=timeout, retries=retries, max_message_bytes=max_message_bytes)
        self.timeout = timeout
        self.retries = retries
        self.max_message_bytes = max_message_bytes
        self.resets = 0  # REQ sockets thrown away after a timeout or a bad reply
        self._rediscover_fn = rediscover or (lambda: None)
        self._ctx = context or zmq.Context.instance()
        self._sock: zmq.Socket[bytes] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._adopt(info)

    def _adopt(self, info: ConnectionInfo) -> None:
        if not version_compatible(info.get("protocol_version")):
            raise ProtocolError("server speaks an incompatible protocol version",
                                server_version=str(info.get("protocol_version")))
        self._reset()
        self.info = info
        self.endpoint = info["endpoint"]
        self._session = Session(info["key"].encode("utf-8"),
                                max_message_bytes=self.max_message_bytes)

    def _rediscover(self) -> bool:
        """Adopt fresh connection info if it names another endpoint or key; True if so."""
        try:
            info = self._rediscover_fn()
        except (CtxError, OSError):
            return False
        if info is not None and (info["endpoint"], info["key"]) != (
                self.info["endpoint"], self.info["key"]):
            self._adopt(info)
            return True
        return False

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             timeout: float | None = None, retries: int | None = None) -> Any:
        """Send ``method`` with ``params``; return the reply's ``result`` or raise its error.

        Raises IpcTimeout after the last attempt, MessageTooLarge before sending
        a message over the limit, InvalidInput/UnknownMethod for a request the
        server would refuse anyway, and any engine error the server reports.
        """
        spec = method_spec(method)
        params = validate_params(method, params if params is not None else {})
        timeout = self.timeout if timeout is None else timeout
        if retries is None:
            retries = self.retries if spec.idempotent else 0
        with self._lock:
            if self._closed:
                raise ProtocolError("client is closed")
            key_retried = False
            attempt = 0
            gone: int | None = None  # the server's process, found dead in the last attempt
            while attempt <= retries:
                header, frames = self._session.pack(method, params)
                size = sum(len(f) for f in frames)
                if size > self.max_message_bytes:
                    raise MessageTooLarge(
                        f"{method} request of {size} bytes exceeds the limit of "
                        f"{self.max_message_bytes}", size=size, limit=self.max_message_bytes)
                try:
                    reply = self._exchange(frames, header["msg_id"], time.monotonic() + timeout)
                    gone = None
                except _Gone as dead:  # no reply can come: this attempt ends now
                    reply, gone = None, dead.pid
                except KeyMismatch:
                    # the server could not verify the request: resending after adopting
                    # the new key is safe for any method, once
                    if key_retried or not self._rediscover():
                        raise
                    key_retried = True
                    continue
                if reply is not None:
                    return self._result(reply)
                self._reset()
                attempt += 1
                if attempt <= retries:
                    self._rediscover()
        if gone is not None:
            raise ServerUnavailable(
                f"the ctx engine (process {gone}) stopped while {method} waited for it: it "
                "was killed or crashed; the next ctx command starts it again",
                reason="stopped", pid=gone)
        raise IpcTimeout(
            f"no reply to {method} from {self.endpoint} within {timeout:g} s "
            f"({retries + 1} attempt{'s' if retries else ''})",
            method=method, timeout_s=timeout, attempts=retries + 1, endpoint=self.endpoint)

    def _socket(self) -> zmq.Socket[bytes]:
        if self._sock is None:
            sock = self._ctx.socket(zmq.REQ)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
            if needs_ipv6(self.endpoint):
                sock.setsockopt(zmq.IPV6, 1)
            sock.connect(self.endpoint)
            self._sock = sock
        return self._sock

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
            self.resets += 1

    def _exchange(self, frames: list[bytes], msg_id: str, deadline: float) -> Message | None:
        """One attempt: send, then poll until ``deadline``; None on timeout."""
        sock = self._socket()
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not sock.poll(max(1, int(remaining * 1000)), zmq.POLLOUT):
            return None
        try:
            sock.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            return None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not sock.poll(max(1, int(min(remaining, LIVENESS_S) * 1000)), zmq.POLLIN):
                self._check_alive()
                continue
            raw = sock.recv_multipart()
            try:
                msg = self._session.unpack(raw, reply=True)
            except Rejected as rej:
                self._reset()
                if type(rej.error) is BadSignature:
                    raise KeyMismatch(
                        f"the reply from {self.endpoint} cannot be verified with this "
                        "connection's key: the server restarted with a new key; read its "
                        "connection file again (ctx does so by itself when it can)",
                        endpoint=self.endpoint) from None
                raise rej.error from None
            if msg.header["parent"] != msg_id:
                self._reset()
                raise ProtocolError("reply answers another request", parent=msg.header["parent"])
            return msg

    def _check_alive(self) -> None:
        """End the attempt at once when the server's process is gone (killed, crashed):
        no reply can come. A retry goes to a restarted server if one is found; after the
        last, the call fails with ServerUnavailable, not after every timeout."""
        pid = self.info.get("pid")
        if isinstance(pid, int) and pid > 0 and not pid_alive(pid):
            raise _Gone(pid)

    @staticmethod
    def _result(msg: Message) -> Any:
        body = msg.body
        if not isinstance(body, dict) or not isinstance(body.get("ok"), bool):
            raise ProtocolError("reply body: expected an object with a boolean 'ok'")
        if body["ok"]:
            return body.get("result")
        error = body.get("error")
        if not isinstance(error, dict):
            raise ProtocolError("error reply without an error object")
        try:
            exc: CtxError = error_from_dict(error)
        except (TypeError, ValueError):
            raise ProtocolError("error reply with a malformed error object") from None
        raise exc

    def close(self) -> None:
        """Close the socket (pending requests are abandoned); the context is shared."""
        with self._lock:
            self._closed = True
            if self._sock is not None:
                self._sock.close(linger=0)
                self._sock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

