"""Job bodies for ingestion: paths (files and folders), text, and conversations."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.errors import CtxError, FileRejected, NoSpace
from engine.flows.jobs import Cancelled, Job
from engine.flows.runtime import Runtime
from engine.flows.writer import Prepared, Writer, batched
from engine.ingest.conversation import load_conversation
from engine.ingest.loaders import load_file, load_text
from engine.ingest.place import root_of, with_root
from engine.ingest.walker import walk_paths
from engine.metrics import ALERT_INGEST_FAILED
from engine.pathnames import shown
from engine.types import LoadedDocument

log = logging.getLogger("ctx.ingest")

BATCH_CHUNKS = 64


def _reject(job: Job, path: str, reason: str) -> None:
    job.files_skipped += 1
    job.errors.append({"path": path, "reason": reason})


def ingest_paths(rt: Runtime, writer: Writer, paths: Sequence[str]) -> Callable[[Job, Callable[[], None]], None]:
    """A job body that ingests files and folders, reporting bad files and going on."""
    cfg = rt.cfg.ingest

    given = [Path(p) for p in paths]  # the folders a file's root is taken from

    def work(job: Job, progress: Callable[[], None]) -> None:
        files: list[Path] = []
        for item in walk_paths(paths, excludes=cfg.excludes, respect_gitignore=cfg.respect_gitignore):
            if isinstance(item, FileRejected):
                _reject(job, item.path, item.reason)
            else:
                files.append(item)
        job.files_total = len(files) + job.files_skipped
        progress()

        def prepared() -> Iterator[Prepared]:
            seen: dict[tuple[str, str, str], Prepared] = {}  # this job's contents so far
            for path in files:
                job.check()  # a safe point: every earlier file is stored or not at all
                job.current = shown(path)
                try:
                    doc = with_root(load_file(path, max_bytes=cfg.max_file_bytes),
                                    root_of(path, given))
                    item = writer.prepare(doc, dedupe=seen)
                except FileRejected as exc:
                    _reject(job, exc.path, exc.reason)
                    job.files_done += 1
                    progress()
                    continue
                if item is None:
                    job.files_unchanged += 1
                    job.files_done += 1
                    progress()
                    continue
                yield item

        _write_all(rt, writer, job, prepared(), progress)
        if job.errors:
            rt.metrics.incr("context_engine.ingestion.files_failed", len(job.errors))
            rt.metrics.alert(ALERT_INGEST_FAILED, True, f"{len(job.errors)} files skipped")
    return work


def _write_all(rt: Runtime, writer: Writer, job: Job, items: Iterator[Prepared],
               progress: Callable[[], None]) -> None:
    def on_written(p: Prepared, sid: int) -> None:
        _count_written(rt, job, p, sid)
        progress()

    for group in batched(items, BATCH_CHUNKS):
        try:
            writer.write_batch(group, on_written, job.check)
        except NoSpace:
            rt.metrics.alert(ALERT_INGEST_FAILED, True, "disk full")
            raise NoSpace(
                f"the disk holding the data dir filled up: {len(job.sources)} of "
                f"{job.files_total} files were stored before it did, and are kept; the "
                "others were not stored at all; free some space and ingest again (the "
                "stored ones are skipped as unchanged)", stored=len(job.sources),
                files=job.files_total) from None
        except CtxError:
            rt.metrics.alert(ALERT_INGEST_FAILED, True, "write failed")
            raise


def _count_written(rt: Runtime, job: Job, p: Prepared, sid: int) -> None:
    job.files_done += 1
    job.chunks += len(p.chunks)
    job.bytes += int(p.doc.meta.get("bytes", len(p.doc.text.encode("utf-8"))))
    job.sources.append(sid)
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

    def __init__(self, rt: Runtime, writer: Writer, load: Callable[[], LoadedDocument]) -> None:
        self.rt, self.writer, self.load = rt, writer, load

    def __call__(self, job: Job, progress: Callable[[], None]) -> None:
        job.files_total = 1
        item = self.writer.prepare(self.load())
        if item is None:
            job.files_unchanged += 1
            job.files_done += 1
            return
        _write_all(self.rt, self.writer, job, iter([item]), progress)

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
                    job.files_unchanged += 1
                    job.files_done += 1
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
        except CtxError:
            self.rt.metrics.alert(ALERT_INGEST_FAILED, True, "write failed")
            raise


def ingest_text(rt: Runtime, writer: Writer, text: str, *, title: str | None, kind: str,
                uri: str | None = None, created_at: float | None = None
                ) -> Callable[[Job, Callable[[], None]], None]:
    return DocumentWork(rt, writer, lambda: load_text(
        text, title=title, kind=kind, uri=uri, created_at=created_at))


def ingest_conversation(rt: Runtime, writer: Writer, turns: Sequence[Mapping[str, Any]], *,
                        title: str, uri: str, session_time: float | None
                        ) -> Callable[[Job, Callable[[], None]], None]:
    return DocumentWork(rt, writer, lambda: load_conversation(
        turns, title=title, uri=uri, session_time=session_time))
