"""What callers follow and steer of the engine's jobs: snapshots, waiting, events,
cancelling, jobs an earlier run left unfinished, pausing; and the hooks that announce
what a job stored (``SourcesChanged``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from engine.api import Event, JobSnapshot, SourcesChanged
from engine.calls import names_fields
from engine.errors import NotFound
from engine.facade.parts import EngineParts

# Which job kinds change the stored sources, and the reason SourcesChanged gives.
_SOURCE_JOBS = {"paths": "ingest", "text": "ingest", "conversation": "ingest", "sync": "sync",
                "repair": "repair", "vectors": "ingest", "delete": "delete"}

_INGEST_KINDS = ("paths", "text", "conversation", "sync", "vectors")


class JobControl(EngineParts):
    """The job half of ``ContextEngine`` (a mixin: the engine holds the runner)."""

    def _job_finished(self, job: Any) -> None:
        self._interrupted.finished(job)
        # The record names the job's real kind: an ingestion ("ingest_job"), else its own
        # ("backup_job", "verify_backup_job", "repair_job"...).
        method = "ingest_job" if job.kind in _INGEST_KINDS else f"{job.kind}_job"
        self.rt.audit.record(method, os.getpid(), [job.id],
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
            self._events.emit(SourcesChanged(reason, tuple(job.sources)))

    def _job_stored(self, job: Any) -> None:
        """A job's keyword stage ended: its sources are stored and keyword-searchable
        (their vectors follow; ``_job_finished`` announces them again then)."""
        reason = _SOURCE_JOBS.get(job.kind)
        if reason is not None and job.sources:
            self._events.emit(SourcesChanged(reason, tuple(job.sources)))

    @names_fields
    def job(self, job_id: str) -> JobSnapshot:
        return self._jobs.get(job_id)

    def jobs(self) -> list[JobSnapshot]:
        return self._jobs.list()

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """The job's snapshot once it ends, or as it stands after ``timeout`` seconds."""
        return self._jobs.wait(job_id, timeout)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hear the engine's own changes, whoever caused them: JobChanged (every job
        snapshot change), SourcesChanged, BuildDone, AlertRaised and AlertCleared.

        ``listener`` runs on the thread where the change happened and must return
        quickly; its exceptions are logged, never raised. Returns an unsubscribe.
        """
        return self._events.subscribe(listener)

    @names_fields
    def cancel_job(self, job_id: str) -> JobSnapshot:
        """Cancel a job: a queued one is dropped, a running one stops at its next safe
        point (between files, between embedding steps). Sources it fully stored stay;
        the one it was writing is not stored. Returns the job's snapshot (a running
        job still shows "running" until it stops: follow it with ``wait``)."""
        self._live()
        self._interrupted.cancelled_by_user(job_id)
        snap = self._jobs.cancel(job_id)
        if snap.final:  # dropped while queued: it never reaches the finish hook
            self._interrupted.finished(snap)
            if snap.kind == "rotate":  # the key it was to rotate to is forgotten
                from engine.flows.keychange import drop_prepared

                drop_prepared(self.data_dir)
        return snap

    def cancel_all(self) -> list[JobSnapshot]:
        """Cancel every queued and running job (for an app that quits); their snapshots."""
        self._live()
        return self._jobs.cancel_all()

    def interrupted_jobs(self) -> list[JobSnapshot]:
        """"paths" jobs an earlier run left unfinished (a quit that stopped them, a
        crash), oldest first: state "cancelled", ``interrupted`` True, their ``inputs``
        and last known counts. Each stays listed until resumed or dismissed."""
        self._live()
        return self._interrupted.listed()

    def resume_interrupted(self, job_id: str) -> str:
        """Ingest an interrupted job's inputs again (what it stored before is skipped as
        unchanged); the new job's id. NotFound when no such job is listed."""
        self._live()
        listed = {s.id: s for s in self._interrupted.listed()}
        if job_id not in listed:
            raise NotFound(f"no interrupted job {job_id}")
        job = self._queue_paths(listed[job_id].inputs, self._interrupted.deleted_under(job_id))
        self._stage.preload()
        new_id = job.id
        self._interrupted.take(job_id)
        return new_id

    def dismiss_interrupted(self, job_id: str) -> None:
        """Stop listing an interrupted job (NotFound when it is not listed)."""
        self._live()
        if self._interrupted.take(job_id) is None:
            raise NotFound(f"no interrupted job {job_id}")

    def pause_ingestion(self) -> None:
        self._jobs.pause()

    def resume_ingestion(self) -> None:
        self._jobs.resume()

    def _wait_ok(self, job_id: str) -> JobSnapshot:
        """Wait for a job; a failed one raises its error (internal_error for a bug)."""
        snap = self._jobs.wait(job_id)
        if snap.error is not None and snap.state == "failed":
            raise snap.error.to_error()
        return snap
