"""Reading the store: search, build_context, the sources, the engine's health (status,
metrics) and the audit log. Each reading call holds the vault's read gate while it runs,
so that a key rotation's file swap (engine/store/vault/gate.py) waits for it, and it for the
swap."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from engine.api import (
    AuditEntry,
    BuildDone,
    MetricsSnapshot,
    Payload,
    SearchHit,
    SourceInfo,
    Status,
)
from engine.calls import current_caller
from engine.errors import InvalidInput
from engine.events import Announcer
from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.jobs import JobRunner
from engine.flows.keeping import health
from engine.flows.runtime import Runtime
from engine.flows.search.inputs import check_kinds, check_query
from engine.flows.search.ranking import search as run_search
from engine.store.vault import sources as src
from engine.store.vault import transcripts
from engine.store.vault.gate import ReadGate
from engine.store.vault.rows import Filters
from engine.types import ConversationTurns, LiveItems

P = ParamSpec("P")
R = TypeVar("R")


def _gated(method: Callable[Concatenate[Reading, P], R]) -> Callable[Concatenate[Reading, P], R]:
    """A reading call: it holds the vault's read gate while it runs."""
    @functools.wraps(method)
    def call(self: Reading, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._gate.shared():
            return method(self, *args, **kwargs)
    return call


class Reading:
    """``ContextEngine``'s search, build_context, sources, status, metrics and audit."""

    def __init__(self, live: Callable[[], Runtime], gate: ReadGate, runner: JobRunner,
                 alerts: IngestAlerts, events: Announcer) -> None:
        self._live = live
        self._gate = gate  # the vault's (``Vault.gate``)
        self._runner = runner
        self._alerts = alerts
        self._events = events  # announces BuildDone

    @_gated
    def search(self, query: str, k: int, *, kinds: Sequence[str] | None, path_prefix: str | None,
               since: float | None, until: float | None, distinct_sources: bool
               ) -> list[SearchHit]:
        rt = self._live()
        query = check_query(query, rt.cfg.search)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInput("k must be between 1 and 1000", field="k")
        filters = Filters(check_kinds(kinds), path_prefix or "", since, until)
        return run_search(rt, query, k, filters=filters, distinct_sources=distinct_sources)

    @_gated
    def build_context(self, query: str, *, live: LiveItems | None, conversation: ConversationTurns | None,
                      budget: int, config: Mapping[str, Any] | None, fmt: str | None,
                      mode: str | None, now: float | None) -> Payload:
        from engine.flows.search.build import build_context

        started, t0 = time.time(), time.perf_counter()
        payload = build_context(self._live(), query, live=live, conversation=conversation,
                                budget=budget, overrides=config, fmt=fmt, mode=mode, now=now)
        if self._events.listened:
            self._events.emit(BuildDone.of(payload, current_caller().origin, started,
                                           (time.perf_counter() - t0) * 1000))
        return payload

    @_gated
    def sources(self, *, project: str | None) -> list[SourceInfo]:
        return transcripts.grouped(src.list_ready(self._live().vault, project=project))

    @_gated
    def status(self) -> Status:
        rt = self._live()
        rt.vault.guard.check()  # vault.db changed behind the engine: every page checked
        self._alerts.prune()  # a failed file deleted from disk is no longer a failure
        return health.status(rt, jobs_active=self._runner.busy(), paused=self._runner.paused,
                             alerts=dict(self.metrics().alerts))

    def metrics(self) -> MetricsSnapshot:
        snap = self._live().metrics.snapshot()
        return MetricsSnapshot.from_dict({**snap, "time": time.time()})

    def audit_event(self, method: str, *, caller_pid: int | None, ids: Sequence[str],
                    counts: Mapping[str, int]) -> None:
        self._live().audit.record(method, caller_pid, ids, counts)

    def audit(self, since: float | None, limit: int) -> list[AuditEntry]:
        rt = self._live()
        rt.audit.flush()  # what calls queued so far is read back
        return [AuditEntry.from_dict(r) for r in rt.vault.audit(since, limit)]
