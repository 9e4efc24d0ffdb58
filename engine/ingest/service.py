"""Job bodies for ingestion: paths (files and folders), text, and conversations."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.errors import CtxError, FileRejected
from engine.ingest.conversation import load_conversation
from engine.ingest.jobs import Job
from engine.ingest.loaders import load_file, load_text
from engine.ingest.pathnames import shown
from engine.ingest.pipeline import Prepared, Writer, batched
from engine.ingest.walker import walk_paths
from engine.metrics import ALERT_INGEST_FAILED
from engine.runtime import Runtime
from engine.types import LoadedDocument

log = logging.getLogger("ctx.ingest")

BATCH_CHUNKS = 64


def _reject(job: Job, path: str, reason: str) -> None:
    job.files_skipped += 1
    job.errors.append({"path": path, "reason": reason})


def ingest_paths(rt: Runtime, writer: Writer, paths: Sequence[str]) -> Callable[[Job, Callable[[], None]], None]:
    """A job body that ingests files and folders, reporting bad files and going on."""
    cfg = rt.cfg.ingest

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
                    doc = load_file(path, max_bytes=cfg.max_file_bytes)
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
        job.files_done += 1
        job.chunks += len(p.chunks)
        job.bytes += int(p.doc.meta.get("bytes", len(p.doc.text.encode("utf-8"))))
        job.sources.append(sid)
        rt.metrics.incr("context_engine.ingestion.sources")
        rt.metrics.incr("context_engine.ingestion.chunks", len(p.chunks))
        progress()

    for group in batched(items, BATCH_CHUNKS):
        try:
            writer.write_batch(group, on_written, job.check)
        except CtxError:
            rt.metrics.alert(ALERT_INGEST_FAILED, True, "write failed")
            raise


def _one_document(rt: Runtime, writer: Writer, load: Callable[[], LoadedDocument]
                  ) -> Callable[[Job, Callable[[], None]], None]:
    """A job body that stores one document made by ``load`` (unless it is unchanged)."""
    def work(job: Job, progress: Callable[[], None]) -> None:
        job.files_total = 1
        item = writer.prepare(load())
        if item is None:
            job.files_unchanged += 1
            job.files_done += 1
            return
        _write_all(rt, writer, job, iter([item]), progress)
    return work


def ingest_text(rt: Runtime, writer: Writer, text: str, *, title: str | None, kind: str,
                uri: str | None = None, created_at: float | None = None
                ) -> Callable[[Job, Callable[[], None]], None]:
    return _one_document(rt, writer, lambda: load_text(
        text, title=title, kind=kind, uri=uri, created_at=created_at))


def ingest_conversation(rt: Runtime, writer: Writer, turns: Sequence[Mapping[str, Any]], *,
                        title: str, uri: str, session_time: float | None
                        ) -> Callable[[Job, Callable[[], None]], None]:
    return _one_document(rt, writer, lambda: load_conversation(
        turns, title=title, uri=uri, session_time=session_time))
