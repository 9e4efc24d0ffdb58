"""What the host hears of the engine: events from the engine's threads (the watched
folders' too) handed to the GUI thread through the one bridge, the typed signals
emitted there, and what they leave known (the jobs seen, the alerts active, the
watched folders, whether the model is loaded).

:class:`EngineEvents` is a member of :class:`desktop.host.EngineHost`, built with the
host's signals (:class:`EventSignals`), its bridge and what to do once the model is
loaded; it never holds the host itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from desktop.bridge import GuiBridge
from desktop.messages import JOB_ALERTS, alert_notice, job_notice
from desktop.notices import Notice
from desktop.qt import QObject, QTimer
from engine import (
    Alert,
    AlertCleared,
    AlertRaised,
    BuildDone,
    Event,
    JobChanged,
    JobSnapshot,
    SourcesChanged,
    Status,
    Warming,
    WatchChanged,
    WatchReport,
)

JOB_FLUSH_MS = 100  # job snapshots reach the GUI at most this often (the last one always)
# Jobs whose failure only a notice tells (a balloon, the tray, Health): ingestion, which
# runs in the background, and the engine's own work (vectors, a repair it started). Any
# other kind (a backup, a backup check, an export, a delete...) is an operation a person
# chose, and it answers where it was started (the Security tab, the CLI): no notice.
NOTICE_KINDS = frozenset({"paths", "text", "conversation", "sync", "vectors", "repair"})


@dataclass(frozen=True)
class EventSignals:
    """The host's signals these events are told through (bound Qt signals: the member
    is given them, not the host)."""

    build_finished: Any
    sources_changed: Any
    job_progress: Any
    watch_changed: Any
    warming: Any
    alert: Any
    alert_cleared: Any


class EngineEvents:
    """Engine events -> GUI-thread signals; see the module docstring."""

    def __init__(self, signals: EventSignals, bridge: GuiBridge, *, timer_parent: QObject,
                 on_model_loaded: Callable[[], None]) -> None:
        self._signals = signals
        self._bridge = bridge
        self._on_model_loaded = on_model_loaded
        self.jobs: dict[str, JobSnapshot] = {}  # the latest snapshot of every job seen
        self.active_alerts: dict[str, Alert] = {}  # engine alerts raised, not cleared
        self.model_loaded = False
        self.watch_report = WatchReport(())
        self.watch_jobs: set[str] = set()  # the ingest jobs the watched folders queued
        self._told_jobs: set[str] = set()
        self._pending_lock = threading.Lock()
        self._pending_jobs: dict[str, JobSnapshot] = {}
        self._flush_scheduled = False
        self._last_flush = 0.0
        self._flush_timer = QTimer(timer_parent)  # dies with the host, never fires after
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush_jobs)

    def opened(self, status: Status) -> None:
        """GUI thread, the engine just opened: what its status says before any event."""
        self.model_loaded = self.model_loaded or status.model_loaded
        for active in status.alerts.values():  # raised before the subscription (at open)
            self._alert_raised(active)

    def on_event(self, event: Event) -> None:
        """The engine's subscription, on the thread of the change: hand it to the GUI."""
        post = self._bridge.post
        if isinstance(event, JobChanged):
            self._on_job(event.job)
        elif isinstance(event, BuildDone):
            post(lambda: self._signals.build_finished.emit(event))
        elif isinstance(event, SourcesChanged):
            post(self._sources_changed)
        elif isinstance(event, AlertRaised):
            post(lambda: self._alert_raised(event.alert))
        elif isinstance(event, AlertCleared):
            post(lambda: self._alert_cleared(event.name))
        elif isinstance(event, Warming):
            post(lambda: self._warming(event))
        elif isinstance(event, WatchChanged):
            post(lambda: self._watched(event.report))

    def _watched(self, report: WatchReport) -> None:
        if report.job is None and not report.removed and report.error is None:
            self.watch_report = report
        if report.job:
            self.watch_jobs.add(report.job)
        self._signals.watch_changed.emit(report)

    def _on_job(self, snapshot: JobSnapshot) -> None:
        """Engine's writer thread: keep the latest snapshot per job, wake the GUI once."""
        with self._pending_lock:
            self._pending_jobs[snapshot.id] = snapshot
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        self._bridge.post(self._jobs_pending)

    def _jobs_pending(self) -> None:
        wait_ms = JOB_FLUSH_MS - (time.monotonic() - self._last_flush) * 1000
        if wait_ms > 0:  # at most ~10 redraws a second, however fast the writer goes
            self._flush_timer.start(int(wait_ms) + 1)
        else:
            self._flush_jobs()

    def _flush_jobs(self) -> None:
        self._last_flush = time.monotonic()
        with self._pending_lock:
            pending, self._pending_jobs = self._pending_jobs, {}
            self._flush_scheduled = False
        for snap in pending.values():
            self.jobs[snap.id] = snap
            self._signals.job_progress.emit(snap)
            if snap.final and snap.id not in self._told_jobs and snap.kind in NOTICE_KINDS:
                self._told_jobs.add(snap.id)
                notice = job_notice(snap)
                if notice is not None:
                    self._signals.alert.emit(notice)

    def _sources_changed(self) -> None:
        self._flush_timer.stop()  # after the job snapshots the engine sent before it
        self._flush_jobs()
        self._signals.sources_changed.emit()

    def _warming(self, event: Warming) -> None:
        self._signals.warming.emit(event)
        if event.stage == "model" and event.done and not self.model_loaded:
            self.model_loaded = True
            if event.error is not None:
                self._signals.alert.emit(Notice(
                    event.error.name, "The embedding model could not be loaded: "
                    f"{event.error.message}", event.error.code))
            self._on_model_loaded()

    def _alert_raised(self, active: Alert) -> None:
        """An engine alert (vector store down...), told once while it lasts."""
        known = active.name in self.active_alerts
        self.active_alerts[active.name] = active
        if not known and active.name not in JOB_ALERTS:
            self._signals.alert.emit(alert_notice(active))

    def _alert_cleared(self, name: str) -> None:
        if self.active_alerts.pop(name, None) is not None:
            self._signals.alert_cleared.emit(name)
