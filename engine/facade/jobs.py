"""The engine's jobs: :class:`JobReports`, what a job's ends tell (the audit record,
``SourcesChanged``, the list of interrupted jobs, the writer's death), hooked to the
job runner when it is made; :class:`JobControl`, what callers follow and steer of the
jobs (snapshots, waiting, cancelling, jobs an earlier run left unfinished, pausing);
and ``wait_ok``, a job waited for whose failure raises."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.api import ErrorInfo, Event, JobSnapshot, SourcesChanged
from engine.errors import NotFound
from engine.flows.audit_log import AuditLog
from engine.flows.ingest.interrupted import InterruptedJobs
from engine.flows.ingest.vector_stage import VectorStage
from engine.flows.job import Job
from engine.flows.jobs import JobRunner
from engine.flows.runtime import Runtime
from engine.metrics import ALERT_WRITER_FAILED, Metrics

log = logging.getLogger("ctx.engine")

# Which job kinds change the stored sources, and the reason SourcesChanged gives.
_SOURCE_JOBS = {"paths": "ingest", "text": "ingest", "conversation": "ingest", "sync": "sync",
                "repair": "repair", "vectors": "ingest", "delete": "delete"}

_INGEST_KINDS = ("paths", "text", "conversation", "sync", "vectors")


def wait_ok(runner: JobRunner, job_id: str) -> JobSnapshot:
    """Wait for a job; a failed one raises its error (internal_error for a bug)."""
    snap = runner.wait(job_id)
    if snap.error is not None and snap.state == "failed":
        raise snap.error.to_error()
    return snap


class JobReports:
    """The job runner's hooks: what a job's stages and end tell the engine's listeners,
    the audit log and the list of interrupted jobs."""

    def __init__(self, interrupted: InterruptedJobs, audit: AuditLog, metrics: Metrics,
                 emit: Callable[[Event], None]) -> None:
        self._interrupted = interrupted
        self._audit = audit
        self._metrics = metrics
        self._emit = emit

    def finished(self, job: Job) -> None:
        self._interrupted.finished(job)
        # The record names the job's real kind: an ingestion ("ingest_job"), else its own
        # ("backup_job", "verify_backup_job", "repair_job"...).
        method = "ingest_job" if job.kind in _INGEST_KINDS else f"{job.kind}_job"
        self._audit.record(method, os.getpid(), [job.id],
                           {"files": job.files_done, "chunks": job.chunks,
                            "errors": len(job.errors), "skipped": len(job.skipped)})
        reason = _SOURCE_JOBS.get(job.kind)
        if job.stage == "vectors":  # announced when stored; now their vectors are in
            reason = "vectors"
        stored = job.state == "done" if reason == "repair" else (job.sources or job.chunks
                                                                 or job.to_embed)
        if reason == "delete":  # what it hid is gone from every read, whatever its end
            stored = bool(job.sources)
        if reason is not None and stored:
            self._emit(SourcesChanged(reason, tuple(job.sources)))

    def stored(self, job: Job) -> None:
        """A job's keyword stage ended: its sources are stored and keyword-searchable
        (their vectors follow; ``finished`` announces them again then)."""
        reason = _SOURCE_JOBS.get(job.kind)
        if reason is not None and job.sources:
            self._emit(SourcesChanged(reason, tuple(job.sources)))

    def writer_died(self, error: ErrorInfo) -> None:
        """The writer thread ended by an error: every waiting job failed with it (the
        runner did that); the engine says so until it is restarted."""
        log.error("the writer thread ended (%s): jobs fail until the engine restarts",
                  error.name)
        self._metrics.alert(ALERT_WRITER_FAILED, True,
                            f"the engine's writer stopped ({error.name}): nothing more is "
                            "stored until the engine restarts (`ctx stop`, then any "
                            "command starts it again)")


class JobControl:
    """What callers follow and steer of the jobs (``ContextEngine``'s job methods)."""

    def __init__(self, live: Callable[[], Runtime], runner: JobRunner,
                 interrupted: InterruptedJobs, stage: VectorStage, data_dir: Path,
                 queue_paths: Callable[[Sequence[str], Sequence[str]], Job]) -> None:
        self._live = live
        self._runner = runner
        self._interrupted = interrupted
        self._stage = stage
        self._data_dir = data_dir
        self._queue_paths = queue_paths  # a "paths" job queued (``Ingest.queue_paths``)

    def job(self, job_id: str) -> JobSnapshot:
        return self._runner.get(job_id)

    def jobs(self) -> list[JobSnapshot]:
        return self._runner.list()

    def wait(self, job_id: str, timeout: float | None) -> JobSnapshot:
        return self._runner.wait(job_id, timeout)

    def cancel_job(self, job_id: str) -> JobSnapshot:
        self._live()
        self._interrupted.cancelled_by_user(job_id)
        snap = self._runner.cancel(job_id)
        if snap.final:  # dropped while queued: it never reaches the finish hook
            self._interrupted.finished(snap)
            if snap.kind == "rotate":  # the key it was to rotate to is forgotten
                from engine.flows.keeping.key_changes import drop_prepared

                drop_prepared(self._data_dir)
        return snap

    def cancel_all(self) -> list[JobSnapshot]:
        self._live()
        return self._runner.cancel_all()

    def interrupted_jobs(self) -> list[JobSnapshot]:
        self._live()
        return self._interrupted.listed()

    def resume_interrupted(self, job_id: str) -> str:
        self._live()
        listed = {s.id: s for s in self._interrupted.listed()}
        if job_id not in listed:
            raise NotFound(f"no interrupted job {job_id}")
        job = self._queue_paths(listed[job_id].inputs, self._interrupted.deleted_under(job_id))
        self._stage.preload()
        self._interrupted.take(job_id)
        return job.id

    def dismiss_interrupted(self, job_id: str) -> None:
        self._live()
        if self._interrupted.take(job_id) is None:
            raise NotFound(f"no interrupted job {job_id}")

    def pause_ingestion(self) -> None:
        self._runner.pause()

    def resume_ingestion(self) -> None:
        self._runner.resume()
