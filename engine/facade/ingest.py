"""What goes into the store: files, folders, texts and conversations queued as jobs of the
single writer (``Ingest.ingest``, ``ingest_conversation``; ``queue_paths`` for a job an
earlier run left unfinished too)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.errors import InvalidInput
from engine.flows.ingest import keyword_stage as service
from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.ingest.interrupted import InterruptedJobs
from engine.flows.ingest.vector_stage import VectorStage
from engine.flows.ingest.writer import Writer
from engine.flows.job import Job
from engine.flows.jobs import JobRunner
from engine.flows.runtime import Runtime
from engine.flows.search.inputs import utf8


class Ingest:
    """``ContextEngine``'s ingest and ingest_conversation."""

    def __init__(self, live: Callable[[], Runtime], writer: Writer, runner: JobRunner,
                 stage: VectorStage, alerts: IngestAlerts,
                 interrupted: InterruptedJobs) -> None:
        self._live = live
        self._writer = writer
        self._runner = runner
        self._stage = stage
        self._alerts = alerts
        self._interrupted = interrupted

    def ingest(self, *, paths: Sequence[str], text: str | None, title: str | None, kind: str,
               external_id: str | None, wait: bool) -> str:
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
        from engine.flows.keeping.export import import_work, is_export

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
                            uri: str | None, session_time: float | None, wait: bool) -> str:
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
