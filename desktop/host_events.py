"""The host's half that hears the engine: events from the engine's threads (and the
watched folders' reports) handed to the GUI thread through the one bridge, and the
typed signals emitted there. A mixin of :class:`desktop.host.EngineHost`, which owns
the signals, the bridge and the state these methods keep.
"""

from __future__ import annotations

import time
from typing import Any

from desktop.messages import JOB_ALERTS, alert_notice, job_notice
from desktop.notices import Notice
from engine import (
    Alert,
    AlertCleared,
    AlertRaised,
    BuildDone,
    Event,
    JobChanged,
    JobSnapshot,
    SourcesChanged,
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


class HostEvents:
    """Engine events -> GUI-thread signals (the attributes are EngineHost's)."""

    bridge: Any
    _pending_lock: Any
    _pending_jobs: dict[str, JobSnapshot]
    _flush_scheduled: bool
    _flush_timer: Any
    _last_flush: float
    _jobs: dict[str, JobSnapshot]
    _told_jobs: set[str]
    _model_loaded: bool
    _state: str
    _active_alerts: dict[str, Alert]
    watch_report: Any
    watch_jobs: set[str]  # the ingest jobs the watched folders queued
    # EngineHost's signals and state setter (annotations only: nothing is shadowed)
    build_finished: Any
    sources_changed: Any
    job_progress: Any
    watch_changed: Any
    warming: Any
    alert: Any
    alert_cleared: Any
    ready: Any
    _set_state: Any

    def _on_event(self, event: Event) -> None:
        """The engine's subscription, on the thread of the change: hand it to the GUI."""
        if isinstance(event, JobChanged):
            self._on_job(event.job)
        elif isinstance(event, BuildDone):
            self.bridge.post(lambda: self.build_finished.emit(event))
        elif isinstance(event, SourcesChanged):
            self.bridge.post(self._sources_changed)
        elif isinstance(event, AlertRaised):
            self.bridge.post(lambda: self._alert_raised(event.alert))
        elif isinstance(event, AlertCleared):
            self.bridge.post(lambda: self._alert_cleared(event.name))
        elif isinstance(event, Warming):
            self.bridge.post(lambda: self._warming(event))
        elif isinstance(event, WatchChanged):
            self._on_watch(event.report)

    def _on_watch(self, report: WatchReport) -> None:
        """The watched folders' report (their threads): hand it to the GUI."""
        def deliver() -> None:
            if report.job is None and not report.removed and report.error is None:
                self.watch_report = report
            if report.job:
                self.watch_jobs.add(report.job)
            self.watch_changed.emit(report)
        self.bridge.post(deliver)

    def _on_job(self, snapshot: JobSnapshot) -> None:
        """Engine's writer thread: keep the latest snapshot per job, wake the GUI once."""
        with self._pending_lock:
            self._pending_jobs[snapshot.id] = snapshot
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        self.bridge.post(self._jobs_pending)

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
            self._jobs[snap.id] = snap
            self.job_progress.emit(snap)
            if snap.final and snap.id not in self._told_jobs and snap.kind in NOTICE_KINDS:
                self._told_jobs.add(snap.id)
                notice = job_notice(snap)
                if notice is not None:
                    self.alert.emit(notice)

    def _sources_changed(self) -> None:
        self._flush_timer.stop()  # after the job snapshots the engine sent before it
        self._flush_jobs()
        self.sources_changed.emit()

    def _warming(self, event: Warming) -> None:
        self.warming.emit(event)
        if event.stage == "model" and event.done and not self._model_loaded:
            self._model_loaded = True
            if event.error is not None:
                self.alert.emit(Notice(event.error.name, "The embedding model could not be "
                                       f"loaded: {event.error.message}", event.error.code))
            if self._state == "loading":
                self._set_state("ready")
                self.ready.emit()

    def _alert_raised(self, active: Alert) -> None:
        """An engine alert (vector store down...), told once while it lasts."""
        known = active.name in self._active_alerts
        self._active_alerts[active.name] = active
        if not known and active.name not in JOB_ALERTS:
            self.alert.emit(alert_notice(active))

    def _alert_cleared(self, name: str) -> None:
        if self._active_alerts.pop(name, None) is not None:
            self.alert_cleared.emit(name)
