"""The ZeroMQ server: one ROUTER socket, a socket thread, and pools of workers.

Only the socket thread touches the ROUTER (ZeroMQ sockets are not
thread-safe). It receives, verifies and validates each request, answers
``ping`` and ``shutdown`` itself, and hands everything else to a worker pool:
cheap reads (status, job, metrics, audit) to a small control pool so they never
queue behind an ingest, engine work to the main pool. Workers sign their
replies and pass them back through an inproc PUSH/PULL pair; the socket thread
routes them by identity. Nothing a client sends can stop the loop: every
failure becomes an error reply when the sender can be addressed, a drop
otherwise, and a count in :meth:`Server.stats` either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self

import zmq

from engine import CtxError, EngineAPI, InternalError, caller, jsonable
from ipc.dispatch import CALLS
from ipc.endpoints import check_loopback, needs_ipv6
from ipc.errors import MessageTooLarge, ServerUnavailable
from ipc.replies import error_body, wire_error
from ipc.session import Message, Rejected, Session
from ipc.wire import (
    METHODS,
    PROTOCOL_VERSION,
    IpcConfig,
    MethodSpec,
    method_spec,
    validate_params,
)

__all__ = ["Server"]

log = logging.getLogger(__name__)


def _waiting(sock: zmq.Socket[bytes], most: int) -> Iterator[list[bytes]]:
    """The messages already waiting on ``sock``, at most ``most`` of them (no blocking)."""
    for _ in range(most):
        try:
            yield sock.recv_multipart(zmq.NOBLOCK, copy=True)
        except zmq.Again:
            return


class Server:
    """Serves one engine on ``endpoint``; ``key`` signs and verifies every message.

    Binds at construction (so a busy address fails early and ``endpoint`` holds
    the real address, e.g. the port chosen for ``tcp://127.0.0.1:*``); only
    loopback or ``ipc://`` endpoints are accepted (ConfigError 1001 otherwise,
    see :mod:`ipc.endpoints`), checked before and after binding. Call
    :meth:`run` on the thread that should own the socket, or :meth:`start` for
    a background thread; :meth:`stop` (any thread, signal handlers included)
    ends it after in-flight requests finish or ``drain_timeout_s`` passes.
    """

    def __init__(self, engine: EngineAPI, endpoint: str, key: bytes | str, *,
                 workers: int | None = None, max_message_bytes: int | None = None,
                 config: IpcConfig | None = None) -> None:
        overrides = {k: v for k, v in (("workers", workers),
                                       ("max_message_bytes", max_message_bytes)) if v is not None}
        self.config = dataclasses.replace(config or IpcConfig(), endpoint=endpoint, **overrides)
        self._engine = engine
        raw_key = key if isinstance(key, str) else bytes(key).decode("utf-8", "replace")
        self._secrets = (raw_key,)  # never repeated in a reply (replies.wire_error)
        self._session = Session(key.encode("utf-8") if isinstance(key, str) else key,
                                max_message_bytes=self.config.max_message_bytes,
                                max_clock_skew_s=self.config.max_clock_skew_s,
                                max_future_skew_s=self.config.max_future_skew_s,
                                history_size=self.config.replay_history)
        self._ctx = zmq.Context()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 1000)
        self._router.setsockopt(zmq.MAXMSGSIZE, self.config.max_message_bytes)
        self._inproc = f"inproc://ctx-replies-{uuid.uuid4().hex}"
        self._pull = self._ctx.socket(zmq.PULL)
        self._pull.setsockopt(zmq.RCVHWM, 0)
        self._push = self._ctx.socket(zmq.PUSH)
        self._push.setsockopt(zmq.SNDHWM, 0)
        self._push_lock = threading.Lock()
        if needs_ipv6(endpoint):
            self._router.setsockopt(zmq.IPV6, 1)
        try:
            self._router.bind(endpoint)
            self.endpoint: str = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
            check_loopback(self.endpoint)  # e.g. "localhost" must have resolved to loopback
            self._socket_file: tuple[str, int] | None = None
            if self.endpoint.startswith("ipc://") and os.name == "posix":
                path = self.endpoint[len("ipc://"):]
                os.chmod(path, 0o600)
                self._socket_file = (path, os.stat(path).st_ino)
            self._pull.bind(self._inproc)
            self._push.connect(self._inproc)
        except BaseException:
            self._close_sockets()
            raise
        self._pool = ThreadPoolExecutor(self.config.workers, thread_name_prefix="ctx-ipc-work")
        self._control = ThreadPoolExecutor(self.config.control_workers,
                                           thread_name_prefix="ctx-ipc-ctl")
        self._stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._in_flight = 0  # socket thread only
        self._stop_at: float | None = None  # monotonic deadline once stopping
        self._started = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> threading.Thread:
        """Run the loop on a background thread (daemon) and return it."""
        self._thread = threading.Thread(target=self.run, name="ctx-ipc-server", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Ask the loop to end: new requests are refused, in-flight ones may finish."""
        if self._stop_at is None:
            self._stop_at = time.monotonic() + self.config.drain_timeout_s

    @property
    def stopping(self) -> bool:
        return self._stop_at is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the loop has ended and sockets are closed; True if it has."""
        return self._done.wait(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Stop and release everything (safe to call twice, or without :meth:`run`)."""
        self.stop()
        if self._started:
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout)
            return
        self._started = True
        self._shutdown_pools()
        self._close_sockets()
        self._done.set()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(timeout=self.config.drain_timeout_s + 5)

    def stats(self) -> dict[str, int]:
        """Counters: received, replied, dropped, rejected:<error name>, method:<name>, ..."""
        with self._stats_lock:
            out = dict(self._stats)
        out["in_flight"] = self._in_flight
        return out

    def _count(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            self._stats[name] += n

    # -- the socket thread -----------------------------------------------------------

    def run(self) -> None:
        """The loop. Returns after :meth:`stop` once in-flight work is done (or timed out)."""
        if self._started:
            raise RuntimeError("Server.run() may be called once")
        self._started = True
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._pull, zmq.POLLIN)
        try:
            while True:
                if self._stop_at is not None and (
                        self._in_flight <= 0 or time.monotonic() > self._stop_at):
                    break
                try:
                    events = dict(poller.poll(50))
                    if self._pull in events:
                        self._forward_replies()
                    if self._router in events:
                        self._receive_requests()
                except Exception as exc:  # noqa: BLE001 - the loop never dies
                    self._count("loop_errors")
                    log.error("ipc loop error: %s", type(exc).__name__)
        finally:
            self._shutdown_pools()
            self._close_sockets()
            self._done.set()

    def _forward_replies(self) -> None:
        for frames in _waiting(self._pull, 1024):
            self._in_flight -= 1
            if frames != [b""]:  # an empty message only settles the count
                self._send(frames)

    def _receive_requests(self) -> None:
        for frames in _waiting(self._router, 256):
            self._count("received")
            try:
                self._handle(frames)
            except Exception as exc:  # noqa: BLE001 - one bad message never stops the loop
                self._count("loop_errors")
                log.error("ipc request handling error: %s", type(exc).__name__)

    def _send(self, frames: list[bytes]) -> None:
        try:
            self._router.send_multipart(frames, zmq.NOBLOCK)
            self._count("replied")
        except zmq.ZMQError:  # peer gone or its queue full: nothing more to do
            self._count("reply_failed")

    def _handle(self, frames: list[bytes]) -> None:
        try:
            msg = self._session.unpack(frames)
        except Rejected as rej:
            self._count(f"rejected:{rej.error.name}")
            if rej.identities and rej.header is not None:
                self._reply_now(rej.identities, rej.header, error_body(rej.error))
            else:
                self._count("dropped")
            return
        method = msg.header["method"]
        try:
            spec = method_spec(method)
            params = validate_params(method, msg.body)
            if self.stopping:
                raise ServerUnavailable("server is shutting down", reason="stopping")
            if self._in_flight >= self.config.max_pending:
                raise ServerUnavailable("server is busy, retry later", reason="busy")
        except CtxError as exc:
            self._count(f"rejected:{exc.name}")
            self._reply_now(msg.identities, msg.header, error_body(exc))
            return
        self._count(f"method:{method}")
        if method == "ping":
            result = {"pong": True, "version": PROTOCOL_VERSION, "pid": os.getpid(),
                      "time": time.time()}
            self._reply_now(msg.identities, msg.header, {"ok": True, "result": result})
            return
        if method == "shutdown":
            self._reply_now(msg.identities, msg.header, {"ok": True, "result": {"stopping": True}})
            self._in_flight += 1
            self._control.submit(self._audit_shutdown, msg)
            self.stop()
            return
        pool = self._control if spec.control else self._pool
        self._in_flight += 1
        self._max("max_in_flight", self._in_flight)
        pool.submit(self._work, spec, msg, params)

    def _max(self, name: str, value: int) -> None:
        with self._stats_lock:
            self._stats[name] = max(self._stats[name], value)

    def _reply_now(self, identities: list[bytes], header: Mapping[str, Any],
                   body: dict[str, Any]) -> None:
        self._send(self._reply_frames(identities, header, body))

    def _reply_frames(self, identities: list[bytes], header: Mapping[str, Any],
                      body: dict[str, Any]) -> list[bytes]:
        method = header.get("method")
        # never echo an unknown name (nor fail on an unverified header's odd value)
        method = method if isinstance(method, str) and method in METHODS else "unknown"
        try:
            _, frames = self._session.pack(method, body, parent=header["msg_id"],
                                           identities=identities)
        except (TypeError, ValueError):
            self._count("internal_errors")
            err: CtxError = InternalError("result could not be encoded as JSON", method=method)
            _, frames = self._session.pack(method, error_body(err), parent=header["msg_id"],
                                           identities=identities)
        size = sum(len(f) for f in frames)
        if size > self.config.max_message_bytes:
            err = MessageTooLarge(f"reply of {size} bytes exceeds the limit of "
                                  f"{self.config.max_message_bytes}", size=size,
                                  limit=self.config.max_message_bytes)
            _, frames = self._session.pack(method, error_body(err), parent=header["msg_id"],
                                           identities=identities)
        return frames

    # -- workers -------------------------------------------------------------------------

    def _work(self, spec: MethodSpec, msg: Message, params: dict[str, Any]) -> None:
        """Run one request on a worker; always pushes exactly one reply.

        The engine hears the call as the caller's ("ipc", its pid, the request id):
        it audits the call and announces a build itself.
        """
        result: Any = None
        error: CtxError | None = None
        try:
            with caller("ipc", pid=msg.header["pid"], request=msg.header["msg_id"]):
                result = self._call(spec.name, params)
        except CtxError as exc:
            error = wire_error(exc, spec.name, self._secrets)
        except Exception as exc:  # noqa: BLE001 - a bug becomes internal_error, not silence
            self._count("internal_errors")
            log.error("engine error in %s (%s):\n%s", spec.name, type(exc).__name__,
                      "".join(traceback.format_tb(exc.__traceback__)))
            error = InternalError(f"{spec.name} failed with {type(exc).__name__}",
                                  type=type(exc).__name__)
        body = {"ok": True, "result": result} if error is None else error_body(error)
        try:
            frames = self._reply_frames(msg.identities, msg.header, body)
        except Exception as exc:  # noqa: BLE001 - never leave a request without its reply
            frames = self._reply_frames(msg.identities, msg.header, error_body(
                InternalError(f"reply failed with {type(exc).__name__}")))
        self._push_reply(frames)

    def _audit_shutdown(self, msg: Message) -> None:
        """``shutdown`` is the server's own method: the server records who asked."""
        try:
            self._engine.audit_event("shutdown", caller_pid=msg.header["pid"],  # type: ignore[attr-defined]
                                     ids=[msg.header["msg_id"]],
                                     counts={"ok": 1, "duration_ms": 0})
        except Exception as exc:  # noqa: BLE001 - auditing never fails a served request
            self._count("audit_errors")
            log.warning("audit_event failed for shutdown (%s)", type(exc).__name__)
        finally:
            self._push_reply([])  # empty: only settles the in-flight count

    def _push_reply(self, frames: list[bytes]) -> None:
        with self._push_lock:
            try:
                if not self._push.closed:
                    self._push.send_multipart(frames or [b""])
                    return
            except zmq.ZMQError:
                pass
        self._count("dropped_after_close")

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        """The engine's typed result of ``method`` (the method table), as wire JSON."""
        result = CALLS[method](self._engine, params)
        if method == "status":  # the serving process's counters travel with it
            result = dataclasses.replace(result, server=self.stats())
        return jsonable(result)

    # -- teardown -----------------------------------------------------------------------

    def _shutdown_pools(self) -> None:
        for pool in (getattr(self, "_pool", None), getattr(self, "_control", None)):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def _close_sockets(self) -> None:
        with self._push_lock:
            self._push.close(linger=0)
        self._pull.close(linger=0)
        self._router.close()  # LINGER 1000: the last replies (shutdown's) still go out
        self._ctx.term()
        socket_file = getattr(self, "_socket_file", None)
        if socket_file is not None:  # libzmq may leave it behind; remove it if still ours
            with contextlib.suppress(OSError):
                if os.stat(socket_file[0]).st_ino == socket_file[1]:
                    os.unlink(socket_file[0])
