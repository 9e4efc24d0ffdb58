"""The bottom of the wire: JSON frames, HMAC-SHA256 signatures, replay history.

A message is the multipart ``[identity..., b"<IDS|MSG>", signature, header, body]``
where the signature is the lowercase hex HMAC-SHA256 of ``header + body`` under
the connection key. :class:`Session` packs and unpacks such messages and knows
nothing about methods or sockets, so server and client share one implementation.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine import CtxError
from ipc.errors import BadSignature, MessageTooLarge, ProtocolError, Replayed
from ipc.wire import (
    DELIMITER,
    MAX_HEADER_BYTES,
    MSG_ID_RE,
    PROTOCOL_VERSION,
    IpcConfig,
    check_header,
)

__all__ = ["Message", "Rejected", "Session", "dumps", "loads"]

_DEFAULTS = IpcConfig()


@dataclass(frozen=True)
class Message:
    """A verified message: routing identities (server side), header and decoded body."""

    identities: list[bytes]
    header: dict[str, Any]
    body: Any
    size: int


class Rejected(Exception):
    """A message refused by :meth:`Session.unpack`.

    ``identities`` and ``header`` are what could be read of it (either may be
    None), so the server can tell whether an error reply is possible at all.
    """

    def __init__(self, error: CtxError, identities: list[bytes] | None,
                 header: dict[str, Any] | None) -> None:
        super().__init__(error.name)
        self.error = error
        self.identities = identities
        self.header = header


def utc_now_iso() -> str:
    """The current time as ISO 8601 UTC with microseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_date(value: str) -> float:
    """Epoch seconds of an ISO 8601 date that carries a time zone; ProtocolError otherwise."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ProtocolError("header.date: expected an ISO 8601 date") from None
    if parsed.tzinfo is None:
        raise ProtocolError("header.date: must carry a time zone (use Z for UTC)")
    return parsed.timestamp()


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused (JSON has none)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _no_constants(name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def loads(data: bytes, what: str) -> Any:
    """Decode strict UTF-8 JSON, raising ProtocolError naming ``what``."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolError(f"{what}: not valid UTF-8 JSON") from None


class Session:
    """Signs, verifies and remembers messages for one side of a connection.

    ``key`` is the HMAC key (the connection file's ``key`` string, UTF-8
    encoded). Verification order is: size, signature (constant time), header
    shape and version, date window, replay history, body JSON; only signed
    messages enter the bounded history, so garbage cannot flush it.

    The date window is ``max_clock_skew_s`` back and ``max_future_skew_s``
    ahead of this clock. The replay history remembers at most
    ``history_size`` ids, and only while their date is inside the window
    (older ones would be refused by date anyway). When it is full, the
    *oldest-dated* id is forgotten and its date becomes a floor: messages
    dated at or before it are refused (``too_old``). Evicting by date, not by
    arrival, means the floor never passes a date still remembered, so one
    message dated ahead cannot push the floor past the correctly dated ones.
    """

    def __init__(self, key: bytes, *, max_message_bytes: int = _DEFAULTS.max_message_bytes,
                 max_clock_skew_s: float = _DEFAULTS.max_clock_skew_s,
                 max_future_skew_s: float = _DEFAULTS.max_future_skew_s,
                 history_size: int = _DEFAULTS.replay_history) -> None:
        if not key:
            raise ValueError("a Session needs a non-empty key: ctx never sends unsigned messages")
        IpcConfig(max_message_bytes=max_message_bytes, max_clock_skew_s=max_clock_skew_s,
                  max_future_skew_s=max_future_skew_s, replay_history=history_size)
        self._key = bytes(key)
        self.max_message_bytes = max_message_bytes
        self.max_clock_skew_s = max_clock_skew_s
        self.max_future_skew_s = max_future_skew_s
        self._seen: dict[str, float] = {}  # msg_id -> date, for ids inside the window
        self._by_date: list[tuple[float, str]] = []  # heap of (date, msg_id): oldest first
        self._history_size = history_size
        self._floor = 0.0  # the newest date forgotten early (history full): refused at or below
        self._lock = threading.Lock()
        self.pid = os.getpid()

    def sign(self, header: bytes, body: bytes) -> bytes:
        """Lowercase hex HMAC-SHA256 of ``header + body``, as ASCII bytes."""
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        mac.update(header)
        mac.update(body)
        return mac.hexdigest().encode("ascii")

    def new_header(self, method: str, parent: str | None = None) -> dict[str, Any]:
        """A fresh header; a reply header also names its request's ``msg_id``."""
        header: dict[str, Any] = {"msg_id": uuid.uuid4().hex, "method": method,
                                  "version": PROTOCOL_VERSION, "date": utc_now_iso(),
                                  "pid": os.getpid()}
        if parent is not None:
            header["parent"] = parent
        return header

    def pack(self, method: str, body: Any, *, parent: str | None = None,
             identities: Sequence[bytes] = ()) -> tuple[dict[str, Any], list[bytes]]:
        """Frames for one message (identities first, for a ROUTER) and the header used."""
        header = self.new_header(method, parent)
        header_bytes, body_bytes = dumps(header), dumps(body)
        frames = [*identities, DELIMITER, self.sign(header_bytes, body_bytes),
                  header_bytes, body_bytes]
        return header, frames

    def unpack(self, frames: Sequence[bytes], *, reply: bool = False) -> Message:
        """Verify and decode one received multipart message; raises :class:`Rejected`."""
        frames = [bytes(f) for f in frames]
        try:
            split = frames.index(DELIMITER)
        except ValueError:
            raise Rejected(ProtocolError("no <IDS|MSG> delimiter frame"), None, None) from None
        identities, rest = frames[:split], frames[split + 1:]
        peek = _peek_header(rest[1]) if len(rest) >= 2 else None
        size = sum(len(f) for f in frames)

        def reject(error: CtxError) -> Rejected:
            return Rejected(error, identities, peek)

        if size > self.max_message_bytes:
            raise reject(MessageTooLarge(
                f"message of {size} bytes exceeds the limit of {self.max_message_bytes}",
                size=size, limit=self.max_message_bytes))
        if len(rest) != 3:
            raise reject(ProtocolError(
                f"expected 3 frames after the delimiter, got {len(rest)}", frames=len(rest)))
        signature, header_bytes, body_bytes = rest
        if len(header_bytes) > MAX_HEADER_BYTES:
            raise reject(ProtocolError(f"header exceeds {MAX_HEADER_BYTES} bytes"))
        if not signature:
            raise reject(BadSignature("message is not signed"))
        if not hmac.compare_digest(signature, self.sign(header_bytes, body_bytes)):
            raise reject(BadSignature("signature does not match the connection key"))
        try:
            header = check_header(loads(header_bytes, "header"), reply=reply)
            self._check_fresh(header)
            body = loads(body_bytes, "body")
        except CtxError as exc:
            raise reject(exc) from None
        return Message(identities, header, body, size)

    def _check_fresh(self, header: dict[str, Any]) -> None:
        date = parse_date(header["date"])
        now = time.time()
        if date < now - self.max_clock_skew_s:
            raise Replayed(f"message date is {now - date:.0f} s behind this clock",
                           reason="date", limit_s=self.max_clock_skew_s)
        if date > now + self.max_future_skew_s:
            raise Replayed(f"message date is {date - now:.0f} s ahead of this clock",
                           reason="future", limit_s=self.max_future_skew_s)
        msg_id = header["msg_id"]
        with self._lock:
            self._expire(now - self.max_clock_skew_s)
            if msg_id in self._seen:
                raise Replayed("message id was already received", reason="seen")
            if date <= self._floor:
                raise Replayed("message is older than the replay history", reason="too_old")
            self._seen[msg_id] = date
            heapq.heappush(self._by_date, (date, msg_id))
            while len(self._seen) > self._history_size:
                evicted, old_id = heapq.heappop(self._by_date)
                del self._seen[old_id]
                self._floor = max(self._floor, evicted)

    def _expire(self, horizon: float) -> None:
        """Forget ids dated before ``horizon``: the date check refuses them already."""
        heap = self._by_date
        while heap and heap[0][0] < horizon:
            _, old_id = heapq.heappop(heap)
            del self._seen[old_id]

    def history_len(self) -> int:
        """How many message ids the replay history holds now."""
        with self._lock:
            return len(self._seen)


_MSG_ID_FIELD = re.compile(rb'"msg_id"\s*:\s*"([0-9a-f]{32})"')


def _peek_header(raw: bytes) -> dict[str, Any] | None:
    """An unverified header, only to address an error reply; None if no id can be read.

    A header over ``MAX_HEADER_BYTES`` (docs/wire.md §7), or too deeply nested to
    parse, is never parsed: it is scanned for its ``"msg_id": "<32 hex>"`` pair
    instead, used only when exactly one distinct id appears (two ids: no reply),
    so such a message still gets its error reply when it can be addressed.
    """
    header: Any = None
    if len(raw) <= MAX_HEADER_BYTES:
        try:
            header = loads(raw, "header")
        except ProtocolError:
            header = None
    if isinstance(header, dict):
        msg_id = header.get("msg_id")
        if isinstance(msg_id, str) and MSG_ID_RE.fullmatch(msg_id):
            return header
        return None
    if header is not None:
        return None  # valid JSON, not an object: nothing to address
    ids = {m.group(1) for m in _MSG_ID_FIELD.finditer(raw)}
    if len(ids) != 1:
        return None
    return {"msg_id": ids.pop().decode("ascii")}
