"""What travels on ctx's wire: protocol version, headers, methods and their schemas.

The schemas are plain data checked by a tiny validator (no dependency): every
request names its fields, their types and ranges; unknown fields are refused
with ``invalid_input``. Replies have looser schemas (extra keys allowed) used by
tests and by anyone who wants to check a server. Nothing here does I/O or
imports ZeroMQ, so any part of ctx may import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine import (
    FINAL_JOB_STATES,
    JOB_STATES,
    LIMITS,
    LIVE_KINDS,
    SOURCE_KINDS,
    InvalidBudget,
    InvalidItemKind,
    LiveSnapshotTooLarge,
    bounded,
    check_bounds,
)
from ipc.endpoints import check_loopback
from ipc.errors import ProtocolError, UnknownMethod
from ipc.schema import Field, check, check_text

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DELIMITER",
    "FINAL_JOB_STATES",
    "JOB_STATES",
    "METHODS",
    "PROTOCOL_VERSION",
    "Field",
    "IpcConfig",
    "MethodSpec",
    "check",
    "check_header",
    "method_spec",
    "validate_params",
    "validate_result",
    "version_compatible",
]

PROTOCOL_VERSION = "1.0"
DELIMITER = b"<IDS|MSG>"
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
HEADER_FIELDS = ("msg_id", "method", "version", "date", "pid")
REPLY_HEADER_FIELDS = (*HEADER_FIELDS, "parent")

MSG_ID_RE = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class IpcConfig:
    """Wire settings for server and client, defaults in one place.

    ``endpoint`` None means the platform default (``ipc://`` socket in the
    runtime dir on POSIX, ``tcp://127.0.0.1:<free port>`` on Windows); any
    other must be loopback or ``ipc://`` (:func:`ipc.endpoints.check_loopback`).
    """

    endpoint: str | None = None
    workers: int = bounded(4, 1, 256)  # pool for engine calls (build_context, search, ingest...)
    # a separate pool for status/job/metrics: never behind an ingest
    control_workers: int = bounded(2, 1, 64)
    max_pending: int = bounded(1024, 1, 1_000_000)  # queued beyond this: server_unavailable
    max_message_bytes: int = bounded(DEFAULT_MAX_MESSAGE_BYTES, 4096, 1 << 30)
    # a message dated further back is refused as replayed
    max_clock_skew_s: float = bounded(120.0, 1.0, 86_400.0)
    # dated further ahead: refused too (one shared clock: only a clock step or a forger)
    max_future_skew_s: float = bounded(10.0, 0.0, 3600.0)
    replay_history: int = bounded(10_000, 16, 10_000_000)  # ids remembered to refuse replays
    # on shutdown, how long in-flight requests may finish
    drain_timeout_s: float = bounded(5.0, 0.0, 3600.0)
    timeout_s: float = bounded(10.0, 0.01, 86_400.0)  # client: per attempt
    retries: int = bounded(2, 0, 100)  # client: extra attempts for idempotent methods

    def __post_init__(self) -> None:
        check_bounds(self, "ipc")
        if self.endpoint is not None:
            check_loopback(self.endpoint)


@dataclass(frozen=True)
class MethodSpec:
    """A method: its request schema, reply schema, and whether a retry is harmless."""

    name: str
    params: Mapping[str, Field]
    result: Field
    idempotent: bool = True
    control: bool = False  # served by the control pool (cheap reads)
    # a check across parameters, after each one fits its Field (e.g. live text bytes)
    extra_check: Callable[[Mapping[str, Any]], None] | None = field(default=None,
                                                                     compare=False)


def _obj(fields: Mapping[str, Field] | None = None, **kw: Any) -> Field:
    return Field("object", fields=fields or {}, **kw)


# Limits a caller can rely on: the engine's own (engine/limits.py: ``LIMITS``, imported
# above), and the wire's alone; tests/ipc/test_ipc_wire_limits.py checks docs/wire.md against them.
MAX_LONG_QUERY_CHARS = 100_000  # recall's query and task (the engine does not cap them)
_TEXT_MAX = 8 * 1024 * 1024  # characters; the message size limit bites first anyway
_PATH = Field("str", min_len=1, max_len=4096)
_TIME = Field("number", nullable=True, lo=0.0, hi=1e11)
_SHORT = Field("str", nullable=True, max_len=256)
_K = Field("int", lo=1, hi=1000)
_BUDGET = Field("int", lo=LIMITS.min_budget, hi=LIMITS.max_budget, error=InvalidBudget)
_STR_LIST = Field("list", nullable=True, max_len=64, items=Field("str", min_len=1, max_len=64))
_ANY_OBJ = _obj()
_OBJ_LIST = Field("list", items=_ANY_OBJ)
_LIVE_ITEM = _obj({
    "kind": Field("str", choices=LIVE_KINDS, error=InvalidItemKind),
    "source": Field("str", max_len=4096), "title": Field("str", max_len=1024),
    "text": Field("str"), "captured_at": Field("date", nullable=True),
}, extra=False)
_TURN = _obj({"role": Field("str", max_len=64), "text": Field("str"),
              "time": Field("date", nullable=True)})


def _live_bytes(params: Mapping[str, Any]) -> None:
    total = 0
    for item in params.get("live") or ():
        total += len(str(item.get("text", "")).encode("utf-8"))
        if total > LIMITS.max_live_bytes:
            raise LiveSnapshotTooLarge(
                f"build_context.live: the items' text is over {LIMITS.max_live_bytes} bytes",
                field="build_context.live", limit=LIMITS.max_live_bytes)


_JOB_RESULT = _obj({
    "id": Field("str", required=True),
    "state": Field("str", required=True, choices=JOB_STATES),
    "files_total": Field("int", required=True, lo=0),
    "files_done": Field("int", required=True, lo=0),
    "chunks": Field("int", required=True, lo=0),
    "errors": Field("list", required=True, items=_obj({
        "path": Field("str", required=True), "reason": Field("str", required=True)})),
})
_PAYLOAD_RESULT = _obj({
    "context": Field("str", required=True),
    "total_tokens": Field("int", required=True, lo=0),
    "budget": Field("int", required=True, lo=0),
    "items": Field("list", required=True, items=_obj({
        "kind": Field("str", required=True), "source": Field("str", required=True),
        "tokens": Field("int", required=True, lo=0), "score": Field("number", required=True),
        "lanes": Field("object", required=True), "why": Field("str", required=True)})),
    "timings": Field("object", required=True),
    "format": Field("str", required=True),
})
_HIT_RESULT = _obj({
    "chunk_id": Field("int", required=True), "source_id": Field("int", required=True),
    "source": Field("str", required=True), "title": Field("str", required=True),
    "kind": Field("str", required=True), "source_kind": Field("str", required=True),
    "text": Field("str", required=True), "score": Field("number", required=True),
    "lanes": Field("object", required=True), "time": Field("number", nullable=True),
})

_BACKUP_RESULT = _obj({
    "path": Field("str", required=True), "bytes": Field("int", required=True, lo=0),
    "store_id": Field("str", required=True), "key_id": Field("str", required=True),
    "created": Field("number", required=True),
})

METHODS: dict[str, MethodSpec] = {m.name: m for m in (
    MethodSpec("ping", {}, _obj({"pong": Field("bool", required=True),
                                 "version": Field("str", required=True),
                                 "pid": Field("int", required=True)}),
               control=True),
    MethodSpec("status", {}, _ANY_OBJ, control=True),
    MethodSpec("metrics", {}, _ANY_OBJ, control=True),
    MethodSpec("job", {"job_id": Field("str", required=True, min_len=1, max_len=128)},
               _JOB_RESULT, control=True),
    MethodSpec("jobs", {}, Field("list", items=_JOB_RESULT), control=True),
    MethodSpec("cancel_job", {"job_id": Field("str", required=True, min_len=1, max_len=128)},
               _JOB_RESULT, control=True),
    MethodSpec("audit", {"since": _TIME, "limit": Field("int", lo=1, hi=10_000)},
               _OBJ_LIST, control=True),
    MethodSpec("ingest", {
        "paths": Field("list", max_len=100_000, items=_PATH),
        "text": Field("str", nullable=True, max_len=_TEXT_MAX),
        "title": Field("str", nullable=True, max_len=1024),
        "kind": Field("str", choices=SOURCE_KINDS),
        "external_id": Field("str", nullable=True, min_len=1, max_len=4096),
        "wait": Field("bool"),
    }, _obj({"job_id": Field("str", required=True)}), idempotent=False),
    MethodSpec("build_context", {
        "query": Field("str", required=True, max_len=LIMITS.max_query_chars),
        "live": Field("list", nullable=True, max_len=LIMITS.max_live_items, items=_LIVE_ITEM,
                      len_error=LiveSnapshotTooLarge),
        "conversation": Field("list", nullable=True, max_len=LIMITS.max_conversation_turns,
                              items=_TURN),
        "budget": _BUDGET,
        "config": Field("object", nullable=True),
        "fmt": Field("str", nullable=True, min_len=1, max_len=32),
        "mode": Field("str", nullable=True, min_len=1, max_len=32),
        "now": _TIME,
    }, _PAYLOAD_RESULT, extra_check=_live_bytes),
    MethodSpec("search", {
        "query": Field("str", required=True, max_len=LIMITS.max_query_chars), "k": _K,
        "kinds": _STR_LIST,
        "path_prefix": Field("str", nullable=True, max_len=4096),
        "since": _TIME, "until": _TIME, "distinct_sources": Field("bool"),
    }, Field("list", items=_HIT_RESULT)),
    MethodSpec("recall", {
        "query": Field("str", nullable=True, max_len=MAX_LONG_QUERY_CHARS), "auto": Field("bool"),
        "project": _SHORT, "branch": _SHORT, "since": _TIME, "types": _STR_LIST, "k": _K,
        "budget": _BUDGET, "task": Field("str", nullable=True, max_len=MAX_LONG_QUERY_CHARS),
        "fmt": Field("str", min_len=1, max_len=32),
        "index": Field("list", max_len=1_000, items=_PATH), "sync": Field("bool"),
        "cwd": Field("str", nullable=True, max_len=4096),
    }, _ANY_OBJ),
    MethodSpec("sources", {"project": _SHORT}, _OBJ_LIST),
    MethodSpec("delete", {"source": Field("str", required=True, min_len=1, max_len=4096),
                          "wait": Field("bool")},
               _ANY_OBJ, idempotent=False),
    MethodSpec("compact", {"wait": Field("bool")},
               _obj({"job": Field("str", required=True), "bytes_before": Field("int", lo=0),
                     "bytes_after": Field("int", lo=0)}), idempotent=False),
    MethodSpec("rotate_key", {"wait": Field("bool")},
               _obj({"job": Field("str", required=True), "key_id": Field("str", required=True),
                     "old_key_id": Field("str")}), idempotent=False),
    MethodSpec("forget_folder", {"folder": Field("str", required=True, min_len=1,
                                                 max_len=4096)},
               _obj({"forgotten": Field("bool", required=True)}), idempotent=False),
    MethodSpec("sync", {"paths": Field("list", nullable=True, max_len=10_000, items=_PATH)},
               _ANY_OBJ),
    MethodSpec("backup", {"path": Field("str", required=True, min_len=1, max_len=4096),
                          "include_vectors": Field("bool", nullable=True)},
               _BACKUP_RESULT, idempotent=False),
    MethodSpec("verify_backup", {"path": Field("str", required=True, min_len=1, max_len=4096)},
               _BACKUP_RESULT),
    MethodSpec("export", {"path": Field("str", required=True, min_len=1, max_len=4096),
                          "fmt": Field("str", choices=("jsonl", "markdown")),
                          "kind": Field("str", nullable=True, choices=SOURCE_KINDS),
                          "project": _SHORT},
               _obj({"path": Field("str", required=True), "sources": Field("int", lo=0)}),
               idempotent=False),
    MethodSpec("shutdown", {}, _obj({"stopping": Field("bool", required=True)}),
               idempotent=False, control=True),
)}


def method_spec(method: object) -> MethodSpec:
    """The spec of ``method``, or UnknownMethod (which never repeats the name asked for)."""
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None:
        raise UnknownMethod("unknown method (see the method table in docs/wire.md)")
    return spec


def _schema_names() -> frozenset[str]:
    names: set[str] = set(METHODS)
    stack = [f for spec in METHODS.values() for f in spec.params.values()]
    for spec in METHODS.values():
        names.update(spec.params)
    while stack:
        f = stack.pop()
        names.update(f.fields or {})
        stack.extend((f.fields or {}).values())
        if f.items is not None:
            stack.append(f.items)
    return frozenset(names)


def validate_params(method: str, params: Any) -> dict[str, Any]:
    """Check a request body against ``method``'s schema; returns it as a dict.

    Text that is not UTF-8 anywhere in it is ``not_utf8`` (1007); everything
    else wrong is ``invalid_input`` (1002) or a subclass, with ``details.field``.
    """
    spec = method_spec(method)
    check_text(params, method, _SCHEMA_NAMES)
    check(params, Field("object", fields=spec.params, extra=False), method)
    if spec.extra_check is not None:
        spec.extra_check(params)
    return dict(params)


_SCHEMA_NAMES = _schema_names()


def validate_result(method: str, result: Any) -> None:
    """Check a successful reply's ``result`` against ``method``'s reply schema."""
    check(result, method_spec(method).result, f"{method}.result")


def version_compatible(version: object) -> bool:
    """Same major version as ours (minor versions only add optional things)."""
    if not isinstance(version, str) or not re.match(r"^\d+\.\d+$", version):
        return False
    return version.split(".")[0] == PROTOCOL_VERSION.split(".")[0]


def check_header(header: Any, *, reply: bool) -> dict[str, Any]:
    """Validate a decoded header's shape (not its date or id history); ProtocolError."""
    if not isinstance(header, dict):
        raise ProtocolError("header: expected an object")
    need = REPLY_HEADER_FIELDS if reply else HEADER_FIELDS
    for name in need:
        if name not in header:
            raise ProtocolError(f"header.{name}: required", field=f"header.{name}")
    for name in ("msg_id", "parent") if reply else ("msg_id",):
        value = header[name]
        if not isinstance(value, str) or not MSG_ID_RE.fullmatch(value):
            raise ProtocolError(f"header.{name}: expected 32 lowercase hex digits")
    if not isinstance(header["method"], str) or len(header["method"]) > 64:
        raise ProtocolError("header.method: expected a method name")
    if not isinstance(header["date"], str) or len(header["date"]) > 64:
        raise ProtocolError("header.date: expected an ISO 8601 date")
    pid = header["pid"]
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise ProtocolError("header.pid: expected a process id")
    if not version_compatible(header["version"]):
        raise ProtocolError(
            f"header.version: this side speaks {PROTOCOL_VERSION}", expected=PROTOCOL_VERSION
        )
    return header
