"""What the desktop tells a person, as small frozen types: failures and notices.

Signals carry these (never dicts): a :class:`Failure` is an operation that
failed with its error (``engine.ErrorInfo``: stable code and name); a
:class:`Notice` is something worth a balloon or a banner (a job that skipped
files or failed, an engine alert such as the vector store being down). Each
says what it is about, so each place decides once whether it is its to tell.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import CtxError, ErrorInfo, InternalError


def error_info(exc: BaseException) -> ErrorInfo:
    """``exc`` as data: a CtxError's own code and name; anything else internal_error
    with its type (a bug's message may hold anything, so it is not shown)."""
    if isinstance(exc, CtxError):
        return ErrorInfo.of(exc)
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return ErrorInfo(InternalError.code, "internal_error", text, {"type": type(exc).__name__})


@dataclass(frozen=True)
class Failure:
    """An operation ("open", "ingest", "build_context"...) that failed, and why."""

    operation: str
    error: ErrorInfo


@dataclass(frozen=True)
class Notice:
    """Something to tell the person once (a tray balloon, one banner).

    ``name`` is the error's stable name (``ingest_failed``, ``vector_store_unavailable``);
    ``job`` the ingestion job it is about (the Ingestion panel tells those);
    ``alert`` the engine alert behind it, cleared when the engine clears it.
    """

    name: str
    message: str
    code: int = 1000
    job: str | None = None
    alert: str | None = None
