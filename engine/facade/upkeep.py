"""The engine's upkeep: vectors rebuilt from the vault (repair), encrypted backups
taken and verified while it runs, and plaintext export."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from engine.api import BackupResult, CompactResult, ExportResult, KeyChangeResult, RepairResult
from engine.calls import audited
from engine.crypto import keys
from engine.errors import ConfigError, CtxError, StoreLocked
from engine.facade.parts import EngineParts
from engine.flows.job import byte_progress
from engine.flows.jobs import Cancelled
from engine.flows.vector_rebuild import check_vectors, repair_work


class Upkeep(EngineParts):
    """The upkeep half of ``ContextEngine`` (a mixin)."""

    def _check_vectors(self, auto_repair: bool) -> None:
        """Flush pending vector deletions; rebuild vectors the vault has and the vector
        store lacks (in the background, alerting), or alert when the counts differ."""
        if not self.rt.vault.read_only:
            self._writer.flush_tombstones()
        reason = check_vectors(self.rt, auto_repair)
        if reason:
            self.repair(wait=False, reason=reason)

    def repair(self, *, wait: bool = True, reason: str = "repair") -> RepairResult:
        """Rebuild every vector from the vault (the single writer runs it, alerting
        while it does); a full repair also drops embedding-cache rows no chunk uses and
        rebuilds the keyword index. Without ``wait``, only the reason and job id."""
        result: dict[str, Any] = {"reason": reason}
        job = self._jobs.submit("repair", repair_work(self._live(), reason, result))
        result["job"] = job.id
        if reason == "repair":  # recall's learned reader fitted again, after the vectors
            self._refit(force=True)
        if wait:
            self._wait_ok(job.id)
        return RepairResult.from_dict(result)

    def compact(self, *, wait: bool = True) -> CompactResult:
        """Give space back (``engine.flows.compaction``): vault.db's free pages, the
        sealed vector snapshot, the write-ahead log; a job of kind "compact", a step at
        a time. Without ``wait``, returns at once with the job id and the size before."""
        from engine.flows.compaction import compact_work

        job = self._jobs.submit("compact", compact_work(self._live()))
        if not wait:
            return CompactResult(job.id)
        snap = self._wait_ok(job.id)
        return CompactResult(job.id, snap.bytes_total, snap.bytes)

    def rotate_key(self, *, wait: bool = True) -> KeyChangeResult:
        """Move the store to the data key that ``prepare_rotation`` wrote to key.json as
        pending, while the engine runs (``engine.flows.keychange.rotate_work``): a job of
        kind "rotate" (``bytes`` of ``bytes_total`` of the vault exported, ``current``
        the part), during which reads go on and writes wait. ``key_id`` is the new key's,
        ``old_key_id`` the one it replaces; without ``wait``, returns at once with the
        job's id. Refused while a backup runs (it is sealed under the key it began with),
        and by a store whose vectors are kept in Chroma (rotate it closed instead)."""
        from engine.crypto.keys import key_id
        from engine.flows.keychange import pending_key_id, rotate_work

        rt = self._live()
        if not rt.vectors.rekey(self._key):  # (the same key: nothing changes) a Chroma store
            raise ConfigError("this store keeps its vectors in Chroma, whose ids come from the "
                              "key: stop the engine (`ctx stop`) and run `ctx key rotate "
                              "--local`")
        busy = [j for j in self._jobs.list() if j.kind in ("rotate", "backup", "verify_backup")
                and not j.final]
        if busy:
            raise StoreLocked(f"a {busy[0].kind.replace('_', ' ')} is under way (job {busy[0].id}): "
                       "rotate the key after it")
        new_id = pending_key_id(self.data_dir)
        old_id = key_id(self._key)
        job = self._jobs.submit("rotate", rotate_work(rt, self._key, rekeyed=self._rekeyed,
                                                      before_swap=self._warm_done))
        result = KeyChangeResult("rotate", new_id, old_key_id=old_id, job=job.id)
        if not wait:
            return result
        snap = self._wait_ok(job.id)
        return dataclasses.replace(result, seconds=round((snap.finished or 0.0) -
                                                         (snap.started or 0.0), 3))

    def _rekeyed(self, key: bytes) -> None:
        self._key = key  # backups are sealed under it from now on

    def _warm_done(self) -> None:
        """Wait for a warm-up in a thread (it reads the vault on connections of its own
        thread, which a key rotation closes)."""
        thread = getattr(self, "_warming", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _busy_rotating(self) -> None:
        """Refuse a backup while a key rotation runs (it would be sealed under the old
        key and hold the vault's file while it is replaced)."""
        for j in self._jobs.list():
            if j.kind == "rotate" and not j.final:
                raise StoreLocked(f"a key rotation is under way (job {j.id}): back up after it")

    @audited
    def backup(self, path: str, *, include_vectors: bool | None = None) -> BackupResult:
        """Write one encrypted backup file of the store to ``path`` (a folder gets a dated
        name in it), taken consistently while the engine keeps running; followed as a
        job of kind "backup" (bytes done of bytes in all). ``include_vectors`` (default:
        yes, for the memory backend) puts the vector index in it, so that a restore
        loads it instead of rebuilding it from the vault."""
        from engine.flows.backup import take_backup

        rt = self._live()
        self._busy_rotating()
        vectors = include_vectors if include_vectors is not None else \
            rt.cfg.store.vector_backend == "memory"
        return self._tracked("backup", lambda progress: take_backup(
            rt, self._key, path, progress=progress, include_vectors=vectors))

    @audited
    def verify_backup(self, path: str) -> BackupResult:
        """Read a backup of this store whole and check every part of it, restoring nothing
        (BackupDamaged names what is wrong; BackupMismatch: another store's)."""
        from engine.flows.backup import verify_backup

        self._live()
        self._busy_rotating()
        record = keys.read_record(self.data_dir)
        store_id = record.store_id if record is not None else None
        return self._tracked("verify_backup", lambda progress: verify_backup(
            path, data_key=self._key, store_id=store_id, progress=progress))

    @audited
    def export(self, path: str, *, fmt: str = "jsonl", kind: str | None = None,
               project: str | None = None) -> ExportResult:
        """Write the sources (of ``kind`` and ``project``) to ``path`` as plaintext: one
        jsonl file (``ctx ingest`` of it stores them again) or a folder of markdown files.
        The text leaves the store's encryption: callers warn the user first."""
        from engine.flows.export import export_sources

        rt = self._live()
        return export_sources(rt, path, fmt, kind=kind, project=project)

    def _tracked(self, kind: str, run: Callable[[Callable[[int, int], None]], Any]) -> Any:
        """``run(progress)`` on this thread, as a job of ``kind`` others can follow."""
        job = self._jobs.track(kind)
        job.files_total = 1
        progress = byte_progress(job, lambda: self._jobs.progress(job))
        try:
            result = run(progress)
        except Cancelled as exc:
            self._jobs.finish(job, exc)
            raise CtxError(f"the {kind.replace('_', ' ')} was cancelled: nothing was "
                           "written") from None
        except BaseException as exc:
            self._jobs.finish(job, exc if isinstance(exc, Exception) else None)
            raise
        job.files_done = 1
        job.chunks = int(getattr(result, "chunks", 0))
        self._jobs.finish(job, None)
        return result

    def _stop_tracked(self, timeout: float = 30.0) -> None:
        """At close: cancel the backups under way and wait for them to clean up."""
        live = [j for j in self._jobs.list() if j.kind in ("backup", "verify_backup")
                and not j.final]
        for snap in live:
            self._jobs.cancel(snap.id)
        end = time.monotonic() + timeout
        for snap in live:
            self._jobs.wait(snap.id, max(0.0, end - time.monotonic()))
