"""Job bodies for ingestion: paths (files and folders), text, and conversations.

Each body is the job's keyword stage: it stores documents for the keyword lanes
in batches (``Writer.write_batch``); the job then goes on to its vector stage
(``engine.flows.ingest.vector_stage``, run by the ``JobRunner``). A file left out on
purpose is a skip (``job.skipped``); one that fails is an error (``job.errors``)
and raises the ingestion alert until its cause clears (``IngestAlerts``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.errors import FAILURE_REASONS, CtxError, FileRejected, NoSpace
from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.ingest.writer import Prepared, Writer, batched
from engine.flows.job import Cancelled, Job
from engine.flows.runtime import Runtime
from engine.ingest.conversation import load_conversation
from engine.ingest.loaders import load_file, load_text
from engine.ingest.place import root_of, with_root
from engine.ingest.walker import walk_paths
from engine.pathnames import named, shown
from engine.store.vault import sources as src
from engine.types import LoadedDocument

log = logging.getLogger("ctx.ingest")

BATCH_CHUNKS = 64


def _reject(job: Job, alerts: IngestAlerts, exc: FileRejected) -> None:
    """A file not stored: a failure (alerting) or a skip on purpose, by its reason."""
    job.files_skipped += 1
    issue = {"path": exc.path, "reason": exc.reason}
    if exc.detail:
        issue["detail"] = exc.detail
    if exc.reason in FAILURE_REASONS:
        job.errors.append(issue)
        alerts.file_failed(exc.path, exc.reason)
    else:
        job.skipped.append(issue)
        alerts.files_ok([exc.path])


def ingest_paths(rt: Runtime, writer: Writer, alerts: IngestAlerts, paths: Sequence[str],
                 *, leave: frozenset[str] = frozenset()
                 ) -> Callable[[Job, Callable[[], None]], None]:
    """A job body that ingests files and folders, reporting bad files and going on;
    files whose path is in ``leave`` (sources the user deleted) are left out."""
    cfg = rt.cfg.ingest
    paths = [named(p) for p in paths]  # a name that is not UTF-8, sent as it is shown
    given = [Path(p) for p in paths]  # the folders a file's root is taken from

    def work(job: Job, progress: Callable[[], None]) -> None:
        files: list[Path] = []
        for item in walk_paths(paths, excludes=cfg.excludes, respect_gitignore=cfg.respect_gitignore,
                               ignored=job.ignored):
            if isinstance(item, FileRejected):
                _reject(job, alerts, item)
            elif not leave or shown(item) not in leave:
                files.append(item)
        job.files_total = len(files) + job.files_skipped
        job.files_done = job.files_skipped  # those left out while walking are done with
        job.bytes_total = sum(_size(f) for f in files)
        progress()

        def prepared() -> Iterator[Prepared]:
            seen: dict[tuple[str, str, str], Prepared] = {}  # this job's contents so far
            for path in files:
                job.check()  # a safe point: every earlier file is stored or not at all
                job.current = shown(path)
                try:
                    doc = with_root(load_file(path, max_bytes=cfg.max_file_bytes, blobs=cfg),
                                    root_of(path, given))
                    item = writer.prepare(doc, dedupe=seen)
                except FileRejected as exc:
                    _reject(job, alerts, exc)
                    job.files_done += 1
                    job.bytes += _size(path)
                    progress()
                    continue
                if item is None:
                    alerts.files_ok([doc.uri])
                    job.unchanged.extend(sid for sid, _ in src.versions(rt.vault, doc.uri)[:1])
                    job.files_unchanged += 1
                    job.files_done += 1
                    job.bytes += _size(path)
                    progress()
                    continue
                yield item

        _write_all(rt, writer, alerts, job, prepared(), progress)
        alerts.prune()
        if job.errors:
            rt.metrics.incr("context_engine.ingestion.files_failed", len(job.errors))
        if job.skipped:
            rt.metrics.incr("context_engine.ingestion.files_skipped", len(job.skipped))
    return work


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _write_all(rt: Runtime, writer: Writer, alerts: IngestAlerts, job: Job,
               items: Iterator[Prepared], progress: Callable[[], None]) -> None:
    def on_written(p: Prepared, sid: int) -> None:
        _count_written(rt, job, p, sid)
        alerts.files_ok([p.doc.uri])
        progress()

    for group in batched(items, BATCH_CHUNKS):
        try:
            writer.write_batch(group, on_written, job.check)
        except NoSpace:
            alerts.write_failed("store")
            raise NoSpace(
                f"the disk holding the data dir filled up: {len(job.sources)} of "
                f"{job.files_total} files were stored before it did, and are kept; the "
                "others were not stored at all; free some space and ingest again (the "
                "stored ones are skipped as unchanged)", stored=len(job.sources),
                files=job.files_total) from None
        except CtxError:
            alerts.write_failed("store")
            raise
        alerts.write_ok("store")


def _count_written(rt: Runtime, job: Job, p: Prepared, sid: int) -> None:
    job.files_done += 1
    job.chunks += len(p.chunks)
    job.bytes += int(p.doc.meta.get("bytes", len(p.doc.text.encode("utf-8"))))
    job.sources.append(sid)
    if p.alias_of is not None:  # the same content is stored already: say where
        title = src.title_of(rt.vault, sid)
        if title is not None and (sid, title) not in job.existing:
            job.existing.append((sid, title))
    rt.metrics.incr("context_engine.ingestion.sources")
    rt.metrics.incr("context_engine.ingestion.chunks", len(p.chunks))


class DocumentWork:
    """A job body that stores one document made by ``load`` (unless it is unchanged).

    Such jobs queued one behind the other run together (``JobRunner`` joins
    them): their documents are prepared in order and written in batches of
    about ``BATCH_CHUNKS`` chunks, each batch embedded in one pass. A document
    whose uri an earlier one of the group also has is written only after it, as
    if the jobs had run one by one. A job cancelled while its group runs is not
    stored; an error fails the jobs not yet stored, never the ones before.
    """

    def __init__(self, rt: Runtime, writer: Writer, alerts: IngestAlerts,
                 load: Callable[[], LoadedDocument]) -> None:
        self.rt, self.writer, self.alerts, self.load = rt, writer, alerts, load

    def __call__(self, job: Job, progress: Callable[[], None]) -> None:
        job.files_total = 1
        doc = self.load()
        item = self.writer.prepare(doc)
        if item is None:
            self._unchanged(job, doc)
            return
        _write_all(self.rt, self.writer, self.alerts, job, iter([item]), progress)

    def _unchanged(self, job: Job, doc: LoadedDocument) -> None:
        """The same text is stored already under this uri (the same text under another
        title, too: a text's uri is its content's hash): say which source holds it."""
        job.files_unchanged += 1
        job.files_done += 1
        for sid, _ in src.versions(self.rt.vault, doc.uri)[:1]:
            job.unchanged.append(sid)
            title = src.title_of(self.rt.vault, sid)
            if title is not None:
                job.existing.append((sid, title))

    def joins(self, other: object) -> bool:
        return isinstance(other, DocumentWork) and other.writer is self.writer

    def run_joined(self, group: list[tuple[Job, Any]], progress: Callable[[Job], None]
                   ) -> dict[str, BaseException | None]:
        outcome: dict[str, BaseException | None] = {}
        pending: list[tuple[Job, Prepared]] = []
        uris: set[str] = set()
        try:
            for job, work in group:
                job.files_total = 1
                try:
                    job.check()
                    doc = work.load()
                    if doc.uri in uris:  # an earlier version in this group goes in first
                        self._write(pending, outcome, progress)
                        pending, uris = [], set()
                    item = self.writer.prepare(doc)
                except Exception as exc:  # noqa: BLE001 - this job fails; the others go on
                    outcome[job.id] = exc
                    continue
                if item is None:
                    self._unchanged(job, doc)
                    outcome[job.id] = None
                    progress(job)
                    continue
                uris.add(doc.uri)
                pending.append((job, item))
                if sum(len(p.chunks) for _, p in pending) >= BATCH_CHUNKS:
                    self._write(pending, outcome, progress)
                    pending, uris = [], set()
            self._write(pending, outcome, progress)
        except Exception as exc:  # noqa: BLE001 - the jobs not stored yet fail with it
            for job, _ in group:
                outcome.setdefault(job.id, exc)
        return outcome

    def _write(self, pending: list[tuple[Job, Prepared]],
               outcome: dict[str, BaseException | None], progress: Callable[[Job], None]
               ) -> None:
        if not pending:
            return
        job_of = {id(p): job for job, p in pending}

        def on_written(p: Prepared, sid: int) -> None:
            job = job_of[id(p)]
            _count_written(self.rt, job, p, sid)
            outcome[job.id] = None
            progress(job)

        def check() -> None:  # the embedding stops only when no job of the batch is left
            if all(job.cancel_requested for job, _ in pending):
                raise Cancelled("joined jobs")

        def keep(p: Prepared) -> bool:
            job = job_of[id(p)]
            if job.cancel_requested:
                outcome[job.id] = Cancelled(job.id)
                return False
            return True

        try:
            self.writer.write_batch([p for _, p in pending], on_written, check, keep=keep)
        except Cancelled as exc:
            for job, _ in pending:
                outcome.setdefault(job.id, exc)
            return
        except CtxError:
            self.alerts.write_failed("store")
            raise
        self.alerts.write_ok("store")


def ingest_text(rt: Runtime, writer: Writer, alerts: IngestAlerts, text: str, *,
                title: str | None, kind: str, uri: str | None = None,
                created_at: float | None = None
                ) -> Callable[[Job, Callable[[], None]], None]:
    return DocumentWork(rt, writer, alerts, lambda: load_text(
        text, title=title, kind=kind, uri=uri, created_at=created_at))


def ingest_conversation(rt: Runtime, writer: Writer, alerts: IngestAlerts,
                        turns: Sequence[Mapping[str, Any]], *, title: str, uri: str,
                        session_time: float | None
                        ) -> Callable[[Job, Callable[[], None]], None]:
    return DocumentWork(rt, writer, alerts, lambda: load_conversation(
        turns, title=title, uri=uri, session_time=session_time))
