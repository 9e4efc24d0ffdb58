"""The engine's warm-up after open, announced stage by stage (``Warming`` events).

Loading the embedding model takes seconds (more on a busy machine); until it is
loaded a query or an ingestion waits for it. A host that says "ready" should
say it once the model is loaded, and say "loading the model" before: so each
stage is announced when it starts and when it ends, with its duration, or its
error (a model that fails to load here loads again on first use, and fails
there with the same error, in front of the caller).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engine.api import ErrorInfo, Event, Warming
from engine.errors import CtxError, InternalError
from engine.flows.runtime import Runtime

log = logging.getLogger("ctx.engine")

Emit = Callable[[Event], None]


def _stage(emit: Emit, stage: str, work: Callable[[], object],
           closed: Callable[[], bool] = lambda: False) -> bool:
    """Run one stage between its two announcements; whether it succeeded. A stage that
    stops because the engine closed under it did not fail: it is not announced again."""
    emit(Warming(stage, done=False))
    started = time.monotonic()
    error: ErrorInfo | None = None
    try:
        work()
    except CtxError as exc:
        error = ErrorInfo.of(exc)
    except Exception as exc:  # noqa: BLE001 - announced and logged, never lost
        error = ErrorInfo.of(InternalError.of(exc, f"warm-up {stage}"))
    if error is not None and closed():
        log.debug("warm-up: %s stopped, the engine closed", stage)
        return False
    if error is not None:
        log.warning("warm-up: %s failed (%s)", stage, error.name)
    emit(Warming(stage, done=True, seconds=round(time.monotonic() - started, 3),
                 error=error))
    return error is None


def warm(rt: Runtime, emit: Emit, closed: Callable[[], bool]) -> None:
    """Load the model, count a big store's common terms, read the vector index's
    in-memory part; each stage announced. Stops early once ``closed()``."""
    model = getattr(rt.embedder, "load", None)
    started = time.monotonic()
    try:
        big = rt.vault.chunk_count() >= rt.cfg.search.keyword_prune_min_chunks
        if model is not None:
            _stage(emit, "model", model, closed)
        if big and not closed():
            _stage(emit, "keywords", rt.vault.warm_keyword_counts, closed)
    finally:
        rt.vault.expect_common_pass(False)  # counted, or never will be here
    if not closed():
        _stage(emit, "vectors", rt.vectors.warm, closed)
    if not closed():
        emit(Warming("all", done=True, seconds=round(time.monotonic() - started, 3)))


def warm_up(rt: Runtime, emit: Emit, closed: Callable[[], bool], *, background: bool = True
            ) -> threading.Thread | None:
    """:func:`warm` now, or in a daemon thread (returned) with ``background``."""
    if not background:
        warm(rt, emit, closed)
        return None
    if rt.vault.chunk_count() >= rt.cfg.search.keyword_prune_min_chunks:
        rt.vault.expect_common_pass()  # a query asked meanwhile does not make the pass
    thread = threading.Thread(target=warm, args=(rt, emit, closed), name="ctx-warm-up",
                              daemon=True)
    thread.start()
    return thread
