"""Keeping the data: sources deleted (and deletes an earlier run left unfinished,
resumed at open), vectors rebuilt from the vault (repair), space given back (compact),
the data key rotated, encrypted backups taken and verified while the engine runs, and
plaintext export."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from engine import api
from engine.crypto import keys
from engine.errors import ConfigError, CtxError, NotFound, StoreLocked
from engine.facade.jobs import wait_ok
from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.ingest.interrupted import InterruptedJobs
from engine.flows.ingest.writer import Writer
from engine.flows.job import byte_progress
from engine.flows.jobs import Cancelled, JobRunner
from engine.flows.keeping import deleting
from engine.flows.keeping.vector_rebuild import check_vectors, repair_work
from engine.flows.runtime import Runtime
from engine.pathnames import shown
from engine.store.vault import sources as src
from engine.store.vault import transcripts

log = logging.getLogger("ctx.engine")
R = TypeVar("R")


class Keeping:
    """Delete, repair, compaction, key rotation, backups and export (``ContextEngine``'s
    keeping methods); it holds the data key, which seals backups and which a rotation
    replaces."""

    def __init__(self, live: Callable[[], Runtime], data_dir: Path, key: bytes,
                 runner: JobRunner, writer: Writer, alerts: IngestAlerts,
                 interrupted: InterruptedJobs, *, refit: Callable[..., str],
                 warm_done: Callable[[], None]) -> None:
        self._live = live
        self._data_dir = data_dir
        self.key = key  # seals backups; the vault, vectors and names use keys derived from it
        self._runner = runner
        self._writer = writer
        self._alerts = alerts  # a failed file the user deletes is no longer told
        self._interrupted = interrupted  # a resumed job must not bring deleted files back
        self._refit = refit  # recall's learned reader fitted again (``Recall.refit``)
        self._warm_done = warm_done  # a warm-up in a thread has ended (``Lifecycle``)

    def check_vectors(self, auto_repair: bool) -> None:
        """Flush pending vector deletions; rebuild vectors the vault has and the vector
        store lacks (in the background, alerting), or alert when the counts differ."""
        rt = self._live()
        if not rt.vault.read_only:
            self._writer.flush_tombstones()
        reason = check_vectors(rt, auto_repair)
        if reason:
            self.repair(wait=False, reason=reason)

    def delete(self, source: str | int, *, wait: bool) -> api.DeleteResult:
        rt = self._live()
        if not str(source).strip().isdigit():  # a failed file the user lets go of
            self._alerts.forget_under(shown(Path(str(source).strip()).expanduser().resolve()))
        what = deleting.resolve(rt.vault, source)
        if what.empty:
            raise NotFound("no such source (give a source id, uri or path)", field="source")
        uris = src.uris_of(rt.vault, what.ids)
        # a job interrupted earlier must not bring them back when it is resumed
        self._interrupted.deleted(uris + list(what.paths))
        # a transcript's segments are one item, as ``sources`` lists them
        deleted = len({transcripts.file_uri(u) or u for u in uris}) + len(what.paths)
        job = self._runner.submit("delete", deleting.delete_work(rt, self._writer, what))
        if any(u.startswith("transcript:") for u in uris):  # recall learned from them:
            self._refit(force=True)  # fitted again without them, after the delete
        rt.audit.record("delete", os.getpid(), [str(i) for i in what.ids],
                        {"sources": len(what.ids), "paths": len(what.paths)})
        result = api.DeleteResult(deleted, tuple(what.ids), job=job.id)
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

    def repair(self, *, wait: bool, reason: str) -> api.RepairResult:
        result: dict[str, Any] = {"reason": reason}
        job = self._runner.submit("repair", repair_work(self._live(), reason, result))
        result["job"] = job.id
        if reason == "repair":  # recall's learned reader fitted again, after the vectors
            self._refit(force=True)
        if wait:
            wait_ok(self._runner, job.id)
        return api.RepairResult.from_dict(result)

    def compact(self, *, wait: bool) -> api.CompactResult:
        from engine.flows.keeping.compaction import compact_work

        job = self._runner.submit("compact", compact_work(self._live()))
        if not wait:
            return api.CompactResult(job.id)
        snap = wait_ok(self._runner, job.id)
        return api.CompactResult(job.id, snap.bytes_total, snap.bytes)

    def rotate_key(self, *, wait: bool) -> api.KeyChangeResult:
        from engine.crypto.keys import key_id
        from engine.flows.keeping.key_changes import drop_prepared, pending_key_id, rotate_work

        rt = self._live()
        if not rt.vectors.rekey(self.key):  # (the same key: nothing changes) a Chroma store
            drop_prepared(self._data_dir)  # refused: the key prepared for it is forgotten
            raise ConfigError("this store keeps its vectors in Chroma, whose ids come from the "
                              "key: stop the engine (`ctx stop`) and run `ctx key rotate "
                              "--local`")
        busy = [j for j in self._runner.list() if j.kind in ("rotate", "backup", "verify_backup")
                and not j.final]
        if busy:
            if not any(j.kind == "rotate" for j in busy):  # a rotation's pending key is its own
                drop_prepared(self._data_dir)  # refused: the key prepared for it is forgotten
            raise StoreLocked(f"a {busy[0].kind.replace('_', ' ')} is under way (job {busy[0].id}): "
                       "rotate the key after it")
        new_id = pending_key_id(self._data_dir)
        old_id = key_id(self.key)
        job = self._runner.submit("rotate", rotate_work(rt, self.key, expected=new_id,
                                                      rekeyed=self._rekeyed,
                                                      before_swap=self._warm_done))
        result = api.KeyChangeResult("rotate", new_id, old_key_id=old_id, job=job.id)
        if not wait:
            return result
        snap = wait_ok(self._runner, job.id)
        return dataclasses.replace(result, seconds=round((snap.finished or 0.0) -
                                                         (snap.started or 0.0), 3))

    def _rekeyed(self, key: bytes) -> None:
        self.key = key  # backups are sealed under it from now on

    def _busy_rotating(self) -> None:
        """Refuse a backup while a key rotation runs (it would be sealed under the old
        key and hold the vault's file while it is replaced)."""
        for j in self._runner.list():
            if j.kind == "rotate" and not j.final:
                raise StoreLocked(f"a key rotation is under way (job {j.id}): back up after it")

    def backup(self, path: str, *, include_vectors: bool | None) -> api.BackupResult:
        from engine.flows.keeping.backup import take_backup

        rt = self._live()
        self._busy_rotating()
        vectors = include_vectors if include_vectors is not None else \
            rt.cfg.store.vector_backend == "memory"
        return self._tracked("backup", lambda progress: take_backup(
            rt, self.key, path, progress=progress, include_vectors=vectors))

    def verify_backup(self, path: str) -> api.BackupResult:
        from engine.flows.keeping.backup import verify_backup

        self._live()
        self._busy_rotating()
        record = keys.read_record(self._data_dir)
        store_id = record.store_id if record is not None else None
        return self._tracked("verify_backup", lambda progress: verify_backup(
            path, data_key=self.key, store_id=store_id, progress=progress))

    def export(self, path: str, *, fmt: str, kind: str | None, project: str | None
               ) -> api.ExportResult:
        from engine.flows.keeping.export import export_sources

        rt = self._live()
        return export_sources(rt, path, fmt, kind=kind, project=project)

    def _tracked(self, kind: str, run: Callable[[Callable[[int, int], None]], R]) -> R:
        """``run(progress)`` on this thread, as a job of ``kind`` others can follow."""
        job = self._runner.track(kind)
        job.files_total = 1
        progress = byte_progress(job, lambda: self._runner.progress(job))
        try:
            result = run(progress)
        except Cancelled as exc:
            self._runner.finish(job, exc)
            raise CtxError(f"the {kind.replace('_', ' ')} was cancelled: nothing was "
                           "written") from None
        except BaseException as exc:
            self._runner.finish(job, exc if isinstance(exc, Exception) else None)
            raise
        job.files_done = 1
        job.chunks = int(getattr(result, "chunks", 0))
        self._runner.finish(job, None)
        return result

    def stop_tracked(self, timeout: float = 30.0) -> None:
        """At close: cancel the backups under way and wait for them to clean up."""
        live = [j for j in self._runner.list() if j.kind in ("backup", "verify_backup")
                and not j.final]
        for snap in live:
            self._runner.cancel(snap.id)
        end = time.monotonic() + timeout
        for snap in live:
            self._runner.wait(snap.id, max(0.0, end - time.monotonic()))
