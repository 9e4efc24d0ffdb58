"""Who is calling the engine, and what the audit log says of a call.

A host that serves other processes says who asks before it calls the engine::

    with engine.caller(origin="ipc", pid=header_pid, request=msg_id):
        engine_instance.search(...)

The caller lives in a context variable, so it follows the call on its own
thread and nowhere else. The facade reads it: a call with a caller process
(``pid``) to an audited method leaves one audit record (ids and counts taken
from the typed result, never content), and every ``build_context`` announces
``BuildDone`` with the caller's ``origin``. Without a caller (a library user,
a bench) the origin is "local" and nothing is audited.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.api import BackupResult, DeleteResult, ExportResult, Payload, RecallResult
from engine.errors import CtxError, InternalError, name_field

log = logging.getLogger("ctx.engine")

F = TypeVar("F", bound=Callable[..., Any])
# The engine methods whose calls a caller process leaves in the audit log.
AUDITED = frozenset({"ingest", "build_context", "search", "recall", "sources", "delete",
                     "sync", "backup", "verify_backup", "export"})
# Parameters whose sizes (never contents) go into a call's audit record.
_COUNTED_PARAMS = ("paths", "live", "conversation")


@dataclass(frozen=True)
class Caller:
    """Who asks: ``origin`` ("local", "cli", "ipc", "gui"...), the calling process's
    ``pid`` (None: not audited) and the id of its request (``request``), if any."""

    origin: str = "local"
    pid: int | None = None
    request: str | None = None


_NOBODY = Caller()
_CURRENT: ContextVar[Caller | None] = ContextVar("ctx_caller", default=None)


@contextlib.contextmanager
def caller(origin: str, *, pid: int | None = None, request: str | None = None
           ) -> Iterator[Caller]:
    """Engine calls inside this block are made on behalf of this caller."""
    who = Caller(origin, pid, request)
    token = _CURRENT.set(who)
    try:
        yield who
    finally:
        _CURRENT.reset(token)


def current_caller() -> Caller:
    return _CURRENT.get() or _NOBODY


def names_fields(method: F) -> F:
    """Errors about the caller's input that ``method`` raises name their parameter as
    ``<method>.<field>`` (``errors.name_field``), as the wire does."""
    name = method.__name__

    @functools.wraps(method)
    def call(engine: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(engine, *args, **kwargs)
        except CtxError as exc:
            name_field(exc, name)
            raise
    return call  # type: ignore[return-value]


def audited(method: F) -> F:
    """Audit the calls that a caller process makes to ``method`` of an engine: one record
    (``engine.audit_event``) of ids and counts, success or failure, never content."""
    name = method.__name__
    assert name in AUDITED, name
    signature = inspect.signature(method)

    @functools.wraps(method)
    def call(engine: Any, *args: Any, **kwargs: Any) -> Any:
        who = current_caller()
        if who.pid is None:
            return method(engine, *args, **kwargs)
        t0 = time.perf_counter()
        result: Any = None
        error: BaseException | None = None
        try:
            result = method(engine, *args, **kwargs)
            return result
        except Exception as exc:
            error = exc
            raise
        finally:
            params = signature.bind_partial(engine, *args, **kwargs).arguments
            ids, counts = audit_record(who, params, result, error,
                                       int((time.perf_counter() - t0) * 1000))
            try:
                engine.audit_event(name, caller_pid=who.pid, ids=ids, counts=counts)
            except Exception as exc:  # noqa: BLE001 - auditing never fails the call
                log.warning("audit record for %s not written (%s)", name, type(exc).__name__)
    return call  # type: ignore[return-value]


def audit_record(who: Caller, params: Mapping[str, Any], result: Any,
                 error: BaseException | None, elapsed_ms: int
                 ) -> tuple[list[str], dict[str, int]]:
    """The ids and counts of one call's audit record: the caller's request id, the job
    queued; whether it succeeded, how long it took, and sizes of what came and went."""
    ids = [who.request] if who.request else []
    counts: dict[str, int] = {"ok": int(error is None), "duration_ms": elapsed_ms}
    if error is not None:
        counts["error_code"] = error.code if isinstance(error, CtxError) else InternalError.code
    if isinstance(result, str):  # ingest: the job id
        ids.append(result)
    elif isinstance(result, Payload):
        counts.update(total_tokens=result.total_tokens, budget=result.budget,
                      items=len(result.items))
    elif isinstance(result, RecallResult):
        if result.context is not None:
            counts.update(total_tokens=result.total_tokens, budget=result.budget)
        if result.hits is not None:
            counts["results"] = len(result.hits)
    elif isinstance(result, DeleteResult):
        counts["deleted"] = result.deleted
    elif isinstance(result, BackupResult):
        counts.update(bytes=result.bytes, sources=result.sources, chunks=result.chunks)
    elif isinstance(result, ExportResult):  # plaintext left the store: say how much
        counts.update(sources=result.sources, chunks=result.chunks, bytes=result.bytes)
    elif isinstance(result, list):
        counts["results"] = len(result)
    for name in _COUNTED_PARAMS:
        value = params.get(name)
        if isinstance(value, (list, tuple)):
            counts[name] = len(value)
    return ids, counts
