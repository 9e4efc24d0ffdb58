"""Memory of coding sessions: ``recall`` (a query's hits, or the digest a new session
starts with) and ``sync`` (index what is new in the transcript folders), each sync run
as a job of the single writer."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from engine.api import RecallResult, SyncResult
from engine.errors import EngineClosed, InvalidInput
from engine.facade.jobs import wait_ok
from engine.flows.ingest.vector_stage import VectorStage
from engine.flows.ingest.writer import Writer
from engine.flows.job import Job
from engine.flows.jobs import JobRunner
from engine.flows.runtime import Runtime


class Recall:
    """Recall and sync (``ContextEngine.recall``, ``sync``, ``forget_folder``), and the
    fits of recall's learned reader they and other jobs queue (``refit``)."""

    def __init__(self, live: Callable[[], Runtime], writer: Writer, runner: JobRunner,
                 stage: VectorStage) -> None:
        self._live = live
        self._writer = writer
        self._runner = runner
        self._stage = stage
        self.adapt_job = ""  # the learned reader's last fit job

    def recall(self, query: str | None, *, auto: bool, project: str | None,
               branch: str | None, since: float | None, types: Sequence[str] | None, k: int,
               budget: int | None, task: str | None, fmt: str, index: Sequence[str],
               sync: bool, cwd: str | None) -> RecallResult:
        from engine.flows.recall.entry import check_recall, recall

        rt = self._live()
        check_recall(query, auto=auto, types=types, k=k, budget=budget, fmt=fmt, index=index,
                     do_sync=sync)  # before any sync work is queued
        if index or sync:
            holder: list[RecallResult] = []

            def work(job: Job, progress: Callable[[], None]) -> None:
                holder.append(recall(rt, self._writer, None, index=index, do_sync=sync,
                                     progress=_job_progress(job, progress)))
            job = self._runner.submit("sync", work)
            wait_ok(self._runner, job.id)
            holder[0] = _with_vectors(holder[0], job, self.refit())
            if query is None and not auto:
                return holder[0]
            result = recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                            since=since, types=types, k=k, budget=budget, task=task, fmt=fmt,
                            cwd=cwd)
            return dataclasses.replace(result, indexed=holder[0].indexed,
                                       synced=holder[0].synced)
        return recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                      since=since, types=types, k=k, budget=budget, task=task, fmt=fmt,
                      cwd=cwd)

    def forget_folder(self, folder: str) -> bool:
        from engine.flows.recall.sync import forget_folder

        rt = self._live()
        if not isinstance(folder, str) or not folder.strip():
            raise InvalidInput("folder must be a path", field="folder")
        return forget_folder(rt, folder.strip())

    def sync(self, paths: Sequence[str] | None) -> SyncResult:
        from engine.flows.recall.entry import sync

        rt = self._live()
        holder: list[SyncResult] = []
        job = self._runner.submit("sync", lambda job, progress: holder.append(
            sync(rt, self._writer, paths, _job_progress(job, progress))))
        self._stage.preload()
        wait_ok(self._runner, job.id)
        if not holder:  # cancelled (a quit stops jobs) before it read anything
            raise EngineClosed("the sync was stopped before it finished: the engine is "
                               "closing or the job was cancelled; sync again")
        return _sync_with_vectors(holder[0], job, self.refit())

    def refit(self, *, force: bool = False) -> str:
        """Queue a fit of recall's learned reader (``engine.flows.recall.adapt``) when
        ``recall.adapt`` is on and the store grew enough since the last one (``force``:
        whenever it is on; a repair); its job id, or "" (none needed, or one queued
        already). It runs on the writer thread in the background: reads go on."""
        from engine.flows.recall.adapt import fit, needs_fit

        rt = self._live()
        if not rt.cfg.recall.adapt or rt.vault.read_only:
            return ""
        if self.adapt_job and self.adapt_job in {j.id for j in self._runner.list()
                                                 if j.state in ("queued", "running")}:
            return ""
        if not force and not needs_fit(rt):
            return ""
        def work(job: Job, progress: Callable[[], None]) -> None:
            fit(rt, job, progress)
        job = self._runner.submit("adapt", work)
        self.adapt_job = job.id
        return job.id


def _sync_with_vectors(result: SyncResult, job: Job, adapt_job: str = "") -> SyncResult:
    """A sync's result once its vector stage ended: the texts the model embedded for it,
    the time of both stages, and the learned reader's fit it queued."""
    seconds = (job.finished or time.time()) - (job.started or job.created)
    return dataclasses.replace(result, embedded=job.model_texts, seconds=round(seconds, 4),
                               adapt_job=adapt_job)


def _with_vectors(result: RecallResult, job: Job, adapt_job: str = "") -> RecallResult:
    """``_sync_with_vectors`` for the parts of a recall result that a sync made."""
    indexed, synced = result.indexed, result.synced
    return dataclasses.replace(
        result,
        indexed=None if indexed is None else _sync_with_vectors(indexed, job, adapt_job),
        synced=None if synced is None else _sync_with_vectors(synced, job, adapt_job))


def _job_progress(job: Job, progress: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    """A transcript sync's counts, copied onto its job (what `ctx recall --sync` shows)."""
    def update(counts: dict[str, Any]) -> None:
        for name in ("files_total", "files_done", "bytes_total", "bytes", "chunks", "current"):
            setattr(job, name, counts[name])
        progress()
    return update
