"""Memory of coding sessions: ``recall`` (a query's hits, or the digest a new session
starts with) and ``sync`` (index what is new in the transcript folders), each sync run
as a job of the single writer."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from engine.api import RecallResult, SyncResult
from engine.calls import audited, names_fields
from engine.errors import EngineClosed, InvalidInput
from engine.facade.parts import EngineParts


class SessionMemory(EngineParts):
    """The coding-session half of ``ContextEngine`` (a mixin)."""

    @audited
    @names_fields
    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False,
               cwd: str | None = None) -> RecallResult:
        """Search memory of coding sessions, or (``auto``) recent + related + failures.

        ``cwd``: the folder the recall is asked from; its project's sessions rank first
        (``project`` names one outright).

        ``index`` adds transcript folders (and syncs them); ``sync`` first ingests
        what is new in every known folder. Writes go through the single writer.
        """
        from engine.flows.recall import check_recall, recall

        rt = self._live()
        check_recall(query, auto=auto, types=types, k=k, budget=budget, fmt=fmt, index=index,
                     do_sync=sync)  # before any sync work is queued
        if index or sync:
            holder: list[RecallResult] = []

            def work(job: Any, progress: Callable[[], None]) -> None:
                holder.append(recall(rt, self._writer, None, index=index, do_sync=sync,
                                     progress=_job_progress(job, progress)))
            job = self._jobs.submit("sync", work)
            self._wait_ok(job.id)
            holder[0] = _with_vectors(holder[0], job, self._refit())
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

    @names_fields
    def forget_folder(self, folder: str) -> bool:
        """Stop syncing a transcript folder added with ``recall(index=...)`` (one deleted
        from disk, say); what was stored from it stays (``delete`` removes that). False
        when it was not in the list (default folders and config.toml's are not)."""
        from engine.flows.recall_sync import forget_folder

        rt = self._live()
        if not isinstance(folder, str) or not folder.strip():
            raise InvalidInput("folder must be a path", field="folder")
        return forget_folder(rt, folder.strip())

    @audited
    @names_fields
    def sync(self, paths: Sequence[str] | None = None) -> SyncResult:
        """Index what is new in the transcript folders (or ``paths``) since the last sync."""
        from engine.flows.recall import sync

        rt = self._live()
        holder: list[SyncResult] = []
        job = self._jobs.submit("sync", lambda job, progress: holder.append(
            sync(rt, self._writer, paths, _job_progress(job, progress))))
        self._stage.preload()
        self._wait_ok(job.id)
        if not holder:  # cancelled (a quit stops jobs) before it read anything
            raise EngineClosed("the sync was stopped before it finished: the engine is "
                               "closing or the job was cancelled; sync again")
        return _sync_with_vectors(holder[0], job, self._refit())

    def _refit(self, *, force: bool = False) -> str:
        """Queue a fit of recall's learned reader (``engine.flows.recall_adapt``) when
        ``recall.adapt`` is on and the store grew enough since the last one (``force``:
        whenever it is on; a repair); its job id, or "" (none needed, or one queued
        already). It runs on the writer thread in the background: reads go on."""
        from engine.flows.recall_adapt import fit, needs_fit

        rt = self._live()
        if not rt.cfg.recall.adapt or rt.vault.read_only:
            return ""
        if self._adapt_job and self._adapt_job in {j.id for j in self._jobs.list()
                                                   if j.state in ("queued", "running")}:
            return ""
        if not force and not needs_fit(rt):
            return ""
        job = self._jobs.submit("adapt", lambda job, progress: fit(rt, job, progress))
        self._adapt_job = job.id
        return job.id


def _sync_with_vectors(result: SyncResult, job: Any, adapt_job: str = "") -> SyncResult:
    """A sync's result once its vector stage ended: the texts the model embedded for it,
    the time of both stages, and the learned reader's fit it queued."""
    seconds = (job.finished or time.time()) - (job.started or job.created)
    return dataclasses.replace(result, embedded=job.model_texts, seconds=round(seconds, 4),
                               adapt_job=adapt_job)


def _with_vectors(result: RecallResult, job: Any, adapt_job: str = "") -> RecallResult:
    """``_sync_with_vectors`` for the parts of a recall result that a sync made."""
    return dataclasses.replace(result, **{
        name: _sync_with_vectors(getattr(result, name), job, adapt_job)
        for name in ("indexed", "synced") if getattr(result, name) is not None})


def _job_progress(job: Any, progress: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    """A transcript sync's counts, copied onto its job (what `ctx recall --sync` shows)."""
    def update(counts: dict[str, Any]) -> None:
        for name in ("files_total", "files_done", "bytes_total", "bytes", "chunks", "current"):
            setattr(job, name, counts[name])
        progress()
    return update
