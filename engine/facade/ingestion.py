"""What goes into the store and out of it: files, folders, texts and conversations queued
as jobs of the single writer (``Ingestion.ingest``, ``ingest_conversation``), and sources
deleted (``delete``; deletes an earlier run left unfinished resume at open)."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.api import DeleteResult
from engine.errors import CtxError, InvalidInput, NotFound
from engine.facade.jobs import wait_ok
from engine.flows import deleting
from engine.flows import ingest as service
from engine.flows.ingest_alerts import IngestAlerts
from engine.flows.inputs import utf8
from engine.flows.interrupted import InterruptedJobs
from engine.flows.job import Job
from engine.flows.jobs import JobRunner
from engine.flows.runtime import Runtime
from engine.flows.vector_stage import VectorStage
from engine.flows.writer import Writer
from engine.pathnames import shown
from engine.store import sources as src

log = logging.getLogger("ctx.engine")


class Ingestion:
    """``ContextEngine``'s ingest, ingest_conversation and delete."""

    def __init__(self, live: Callable[[], Runtime], writer: Writer, runner: JobRunner,
                 stage: VectorStage, alerts: IngestAlerts, interrupted: InterruptedJobs, *,
                 refit: Callable[..., str]) -> None:
        self._live = live
        self._writer = writer
        self._runner = runner
        self._stage = stage
        self._alerts = alerts
        self._interrupted = interrupted
        self._refit = refit  # recall's learned reader fitted again (``SessionMemory.refit``)

    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str:
        rt = self._live()
        if bool(paths) == (text is not None):
            raise InvalidInput("ingest takes either paths or text, not both or neither",
                               field="paths" if paths else "text")
        if external_id is not None and (text is None or not str(external_id).strip()):
            raise InvalidInput("external_id needs a text and must not be blank",
                               field="external_id")
        if text is not None:
            text = utf8(text, "text")
            work = service.ingest_text(rt, self._writer, self._alerts, text, title=title,
                                       kind=kind, uri=external_id)
            job = self._runner.submit("text", work)
        else:
            job = self.queue_paths(paths)
        self._stage.preload()  # the model loads while the text is stored
        if wait:
            self._runner.wait(job.id)
        return job.id

    def queue_paths(self, paths: Sequence[str], leave: Sequence[str] = ()) -> Job:
        """Queue a "paths" job; ``leave``: files under ``paths`` not to ingest (a resumed
        job leaves out what the user deleted since it was interrupted)."""
        from engine.flows.export import import_work, is_export

        rt = self._live()
        resolved = [str(Path(p).expanduser().resolve()) for p in paths]
        exports = [p for p in resolved if Path(p).is_file() and is_export(p)]
        rest = [p for p in resolved if p not in exports]
        work = service.ingest_paths(rt, self._writer, self._alerts, rest,
                                    leave=frozenset(leave)) if rest else None
        if exports:  # ctx jsonl exports: their sources are stored as they were
            work = import_work(rt, self._writer, exports, then=work)
        assert work is not None  # paths is never empty: ingest and a resumed job say so
        job = self._runner.submit("paths", work, inputs=tuple(resolved))
        self._interrupted.started(job.id, resolved, job.created)
        return job

    def ingest_conversation(self, turns: Sequence[Mapping[str, Any]], *, title: str,
                            uri: str | None = None, session_time: float | None = None,
                            wait: bool = False) -> str:
        rt = self._live()
        uri = uri or "conversation:" + hashlib.sha256(
            repr([(t.get("speaker"), t.get("text")) for t in turns]).encode()).hexdigest()[:16]
        work = service.ingest_conversation(rt, self._writer, self._alerts, turns, title=title,
                                           uri=uri, session_time=session_time)
        job = self._runner.submit("conversation", work)
        self._stage.preload()
        if wait:
            self._runner.wait(job.id)
        return job.id

    def delete(self, source: str | int, *, wait: bool = True) -> DeleteResult:
        rt = self._live()
        if not str(source).strip().isdigit():  # a failed file the user lets go of
            self._alerts.forget_under(shown(Path(str(source).strip()).expanduser().resolve()))
        what = deleting.resolve(rt.vault, source)
        if what.empty:
            raise NotFound("no such source (give a source id, uri or path)", field="source")
        # a job interrupted earlier must not bring them back when it is resumed
        self._interrupted.deleted(src.uris_of(rt.vault, what.ids) + list(what.paths))
        uris = src.uris_of(rt.vault, what.ids)
        job = self._runner.submit("delete", deleting.delete_work(rt, self._writer, what))
        if any(u.startswith("transcript:") for u in uris):  # recall learned from them:
            self._refit(force=True)  # fitted again without them, after the delete
        rt.audit.record("delete", os.getpid(), [str(i) for i in what.ids],
                        {"sources": len(what.ids), "paths": len(what.paths)})
        result = DeleteResult(len(what.ids) + len(what.paths), tuple(what.ids), job=job.id)
        if wait:
            wait_ok(self._runner, job.id)
        return result

    def resume_deletes(self) -> None:
        """Sources a delete was removing when the engine stopped: removed now (a job)."""
        rt = self._live()
        try:
            left = src.being_deleted(rt.vault)
        except CtxError as exc:
            log.warning("deletes not resumed (%s)", exc.name)
            return
        if left and not rt.vault.read_only:
            log.info("%d sources were being deleted: resuming", len(left))
            what = deleting.Deletion(left, [], False)
            self._runner.submit("delete", deleting.delete_work(rt, self._writer, what,
                                                               resumed=True))
