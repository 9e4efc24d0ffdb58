"""ContextEngine: the one public entry to ctx's core.

It owns a data dir (one engine at a time, by a lock file), unlocks the data
key, opens the encrypted vault and the vector store, and exposes ingest,
build_context, search, recall, delete and status. It is thread-safe: reads
run concurrently, writes go through the single writer (the job runner and
the vault's write lock).

Every result is one of engine.api's typed classes. The engine announces its
own changes through ``subscribe`` (jobs, sources, builds, alerts), and audits
the calls that a caller process makes (``engine.calls.caller``) once, here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from engine import paths as P
from engine.api import (
    AuditEntry,
    BackupResult,
    BuildDone,
    DeleteResult,
    Event,
    ExportResult,
    JobChanged,
    JobSnapshot,
    MetricsSnapshot,
    Payload,
    RecallResult,
    RepairResult,
    SearchHit,
    SourceInfo,
    SourcesChanged,
    Status,
    SyncResult,
)
from engine.calls import audited, current_caller, names_fields
from engine.config import Config, load_config
from engine.crypto import keys
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder
from engine.embedding.lazy import LazyEmbedder
from engine.errors import (
    CtxError,
    EngineClosed,
    InvalidInput,
    ModelMismatch,
    NoSpace,
    NotFound,
)
from engine.events import Announcer
from engine.flows import deleting, health, warming
from engine.flows import ingest as service
from engine.flows.audit_log import AuditLog
from engine.flows.ingest_alerts import IngestAlerts
from engine.flows.inputs import check_query, utf8
from engine.flows.interrupted import InterruptedJobs
from engine.flows.jobs import Cancelled, JobRunner
from engine.flows.keychange import open_key
from engine.flows.opening import (
    lock_store,
    new_vault,
    open_vectors,
    prepare_root,
    repair_layout,
)
from engine.flows.ranking import search as run_search
from engine.flows.runtime import Runtime
from engine.flows.vector_rebuild import check_vectors, repair_work
from engine.flows.vector_stage import VectorStage
from engine.flows.writer import Writer
from engine.metrics import ALERT_VAULT_DAMAGED, Metrics
from engine.pathnames import shown
from engine.store import sources as src
from engine.store.lock import DataDirLock
from engine.store.vault import Filters, Vault
from engine.tokens import TokenCounter

log = logging.getLogger("ctx.engine")
# How long close() waits for a warm-up stage in flight (reading the vector index takes
# about 5 s at 100k chunks; a model load cannot be cut short). Hand-set.
WARM_JOIN_S = 10.0

# Which job kinds change the stored sources, and the reason SourcesChanged gives.
_SOURCE_JOBS = {"paths": "ingest", "text": "ingest", "conversation": "ingest", "sync": "sync",
                "repair": "repair", "vectors": "ingest"}


def store_exists(root: Path) -> bool:
    return keys.read_record(root) is not None


def init_store(data_dir: str | Path | None = None, *, passphrase: str | None = None,
               use_keychain: bool | None = None, config: Config | None = None,
               recovery_key: str | None = None) -> Path:
    """Create a new, empty store (its data key and vault). Refuses an existing one, or
    any part of one; a folder holding other files is used only because it was asked.
    ``recovery_key`` (``generate_recovery_key()``, shown to the user) can unlock it too."""
    root, _ = prepare_root(data_dir, create=True, explicit_init=True)
    cfg = config or load_config(root)
    lock = DataDirLock(P.lock_path(root))
    lock.acquire()
    try:
        key = keys.create_key(root, cfg.keys, passphrase=passphrase, use_keychain=use_keychain,
                              recovery_key=recovery_key)
        new_vault(root, key, cfg).close()
    except BaseException:
        if not store_exists(root):  # nothing was made: no lock file is left behind either
            lock.discard()
        raise
    finally:
        lock.release()
    return root


def repair_store(data_dir: str | Path | None = None, *, passphrase: str | None = None,
                 embedder: Embedder | None = None) -> RepairResult:
    """`ctx repair`: set aside a vectors/ that cannot be opened, then rebuild every
    vector from the vault and drop embedding-cache rows no chunk uses."""
    from engine.flows.keychange import settle_closed

    settle_closed(data_dir)  # a key rotation cut short is finished (or undone) first
    moved = repair_layout(data_dir, passphrase=passphrase)
    eng = ContextEngine.open(data_dir, passphrase=passphrase, embedder=embedder, create=False,
                             auto_repair=False)
    try:
        return dataclasses.replace(eng.repair(), set_aside=dict(moved))
    finally:
        eng.close()


class ContextEngine:
    def __init__(self, root: Path, cfg: Config, key: bytes, lock: DataDirLock,
                 embedder: Embedder | None, auto_repair: bool = True) -> None:
        self.data_dir = root
        self.config = cfg
        self._lock = lock
        self._closed = False
        self._warming: threading.Thread | None = None
        self._key = key  # seals backups; the vault, vectors and names use keys derived from it
        vault = new_vault(root, key, cfg)
        try:
            emb = embedder if embedder is not None else LazyEmbedder(cfg.embedding)
            self._own_embedder = embedder is None  # closed with the engine
            self._check_model(vault, emb)
            vectors = open_vectors(root, cfg, key, emb.dim, vault)
        except BaseException:
            vault.close()
            raise
        self._events = Announcer()
        self.rt = Runtime(cfg, root, vault, vectors, emb, TokenCounter.shared(),
                          NameHasher(key, _kept_name_key(vault)),
                          Metrics(on_change=self._events.emit),
                          AuditLog(vault))
        vault.guard.on_damage = lambda exc: self.rt.metrics.alert(
            ALERT_VAULT_DAMAGED, True, exc.message)
        if not vault.pages_checked:  # a big vault's pages are checked in a thread
            vault.guard.check_pages_later()
        self._writer = Writer(cfg, vault, vectors, emb, self.rt.hasher, self.rt.counter)
        try:  # on a full disk too: the reserved space is given back for it
            recovered = vault.with_room(lambda: src.recover(vault))
        except NoSpace:
            recovered = []
            log.warning("disk full: sources left pending by a crash are removed at the next "
                        "open with room")
        if recovered:
            log.warning("recovered %d sources left incomplete by a crash", len(recovered))
        self._interrupted = InterruptedJobs(vault)
        self._alerts = IngestAlerts(self.rt.metrics)
        self._stage = VectorStage(self.rt, self._writer, self._alerts)
        self._jobs = JobRunner(on_finish=self._job_finished, stage=self._stage,
                               on_stage=self._job_stored)
        self._jobs.subscribe(lambda snap: self._events.emit(JobChanged(snap)))
        try:
            self._check_vectors(auto_repair)
        except BaseException:
            self._jobs.stop()
            vectors.close()
            vault.close()
            raise

    # -- lifecycle ---------------------------------------------------------------
    @classmethod
    def open(cls, data_dir: str | Path | None = None, *, config: Config | None = None,
             passphrase: str | None = None, embedder: Embedder | None = None,
             create: bool = True, auto_repair: bool = True,
             recovery_key: str | None = None) -> ContextEngine:
        """Open (or, with ``create``, first create) the store in ``data_dir``.

        ``create`` makes a store only in a missing or empty folder, never in a
        folder that holds other files (that takes ``init_store``). Raises
        StoreLocked when another engine has it open, WrongKey or KeyUnavailable
        when the key cannot be unlocked, StoreNotInitialized, NotAStore or a
        StoreDamaged error naming the damaged part; nothing on disk changes then.
        With ``auto_repair``, vectors missing while the vault holds chunks are
        rebuilt from the vault in the background (alert while it runs).
        ``recovery_key`` unlocks the store instead of its keychain entry or passphrase
        (a recovery key typed as the passphrase, or in CTX_RECOVERY_KEY, does too).
        """
        root, fresh = prepare_root(data_dir, create=create)
        cfg = config or load_config(root)
        lock = lock_store(root)
        try:
            if fresh and not store_exists(root):
                key = keys.create_key(root, cfg.keys, passphrase=passphrase)
            else:
                key = open_key(root, passphrase=passphrase, recovery_key=recovery_key)
            return cls(root, cfg, key, lock, embedder, auto_repair)
        except BaseException:
            if fresh and not store_exists(root):  # a store not made leaves no lock file
                lock.discard()
            lock.release()
            raise

    def warm_up(self, *, background: bool = True) -> threading.Thread | None:
        """Load the embedding model now (in a thread by default), not on the first query;
        then the vector index's in-memory part (``VectorStore.warm``: the exact index of
        a small store, the vector cache of a big one, about 5 s at 100k chunks); in a
        store big enough for the keyword lane's bounds, count its common terms too
        (0.3 s at 100k chunks). Each stage is announced (``Warming``) as it starts and
        ends, so a host can say "loading the model" and then "ready"."""
        waiting = self._waiting_sources()
        thread = warming.warm_up(self.rt, self._events.emit, lambda: self._closed,
                                 background=background)
        self._warming = thread  # close() waits for it
        if waiting:  # sources a crash or a stop left waiting get their vectors in a
            # background job (kind "vectors"; its stage waits for the model to load)
            self._jobs.submit("vectors", lambda job, progress: None)
        return thread

    def _waiting_sources(self) -> int:
        """Sources left waiting for their vectors (a crash, a stop, a cancel), which the
        warm-up's background job ("vectors") resumes; 0 on a read-only store."""
        try:
            waiting = int(src.counts(self.rt.vault)["sources_waiting"])
        except CtxError as exc:  # the next ingest adopts them instead
            log.warning("vectors not resumed (%s)", exc.name)
            return 0
        if waiting and not self.rt.vault.read_only:
            log.info("%d sources wait for their vectors: resuming", waiting)
            return waiting
        return 0

    def close(self) -> None:
        if self._closed:
            return
        self._stop_tracked()
        self._closed = True
        self._jobs.stop()
        warm = self._warming
        if warm is not None and warm is not threading.current_thread():
            warm.join(WARM_JOIN_S)  # a stage in flight ends before the stores close
        self.rt.audit.close()  # what calls and jobs queued is written before the vault closes
        try:
            self.rt.vectors.close()
        finally:
            self.rt.vault.close()
            P.harden(self.data_dir)
            self._lock.release()
            if self._own_embedder:
                close = getattr(self.rt.embedder, "close", None)
                if close is not None:
                    close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _live(self) -> Runtime:
        if self._closed:
            raise EngineClosed("the engine is closed")
        return self.rt

    @staticmethod
    def _check_model(vault: Vault, emb: Embedder) -> None:
        name, dim = vault.get_meta("embedding_model"), vault.get_meta("embedding_dim")
        if name is None:
            vault.set_meta("embedding_model", emb.name)
            vault.set_meta("embedding_dim", str(emb.dim))
        elif name != emb.name or int(dim or 0) != emb.dim:
            raise ModelMismatch(
                f"this store's vectors were made by {name} ({dim} dims); the configured model "
                f"is {emb.name} ({emb.dim} dims). Use the same model or a new data dir.")

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
        if wait:
            self._wait_ok(job.id)
        return RepairResult.from_dict(result)

    def _job_finished(self, job: Any) -> None:
        self._interrupted.finished(job)
        self.rt.audit.record("ingest_job", os.getpid(), [job.id],
                                {"files": job.files_done, "chunks": job.chunks,
                                 "errors": len(job.errors), "skipped": len(job.skipped)})
        reason = _SOURCE_JOBS.get(job.kind)
        if job.stage == "vectors":  # announced when stored; now their vectors are in
            reason = "vectors"
        stored = job.state == "done" if reason == "repair" else (job.sources or job.chunks
                                                                 or job.to_embed)
        if reason is not None and stored:
            self._events.emit(SourcesChanged(reason, tuple(job.sources)))

    def _job_stored(self, job: Any) -> None:
        """A job's keyword stage ended: its sources are stored and keyword-searchable
        (their vectors follow; ``_job_finished`` announces them again then)."""
        reason = _SOURCE_JOBS.get(job.kind)
        if reason is not None and job.sources:
            self._events.emit(SourcesChanged(reason, tuple(job.sources)))

    # -- ingestion ---------------------------------------------------------------
    @audited
    @names_fields
    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str:
        """Queue an ingestion of files/folders or of a text; returns the job id.

        ``external_id`` (text only) is the caller's id for the text: it becomes the
        source's uri, so ingesting again under it replaces the earlier version and
        ``delete(external_id)`` removes it, as ``ingest_conversation``'s ``uri`` does.
        """
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
            job = self._jobs.submit("text", work)
        else:
            from engine.flows.export import import_work, is_export

            resolved = [str(Path(p).expanduser().resolve()) for p in paths]
            exports = [p for p in resolved if Path(p).is_file() and is_export(p)]
            rest = [p for p in resolved if p not in exports]
            work = service.ingest_paths(rt, self._writer, self._alerts, rest) if rest else None
            if exports:  # ctx jsonl exports: their sources are stored as they were
                work = import_work(rt, self._writer, exports, then=work)
            job = self._jobs.submit("paths", work, inputs=tuple(resolved))
            self._interrupted.started(job.id, resolved, job.created)
        self._stage.preload()  # the model loads while the text is stored
        if wait:
            self._jobs.wait(job.id)
        return job.id

    def ingest_conversation(self, turns: Sequence[Mapping[str, Any]], *, title: str,
                            uri: str | None = None, session_time: float | None = None,
                            wait: bool = False) -> str:
        """Queue a conversation (turns with speaker and text) as one source; returns a job id."""
        rt = self._live()
        uri = uri or "conversation:" + hashlib.sha256(
            repr([(t.get("speaker"), t.get("text")) for t in turns]).encode()).hexdigest()[:16]
        work = service.ingest_conversation(rt, self._writer, self._alerts, turns, title=title,
                                           uri=uri, session_time=session_time)
        job = self._jobs.submit("conversation", work)
        self._stage.preload()
        if wait:
            self._jobs.wait(job.id)
        return job.id

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
        new_id = self.ingest(paths=listed[job_id].inputs)
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

    # -- reading -----------------------------------------------------------------
    @audited
    @names_fields
    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False) -> list[SearchHit]:
        """The top ``k`` chunks for ``query``, ranked as build_context ranks them.

        ``distinct_sources``: at most one chunk (the best) per source, so ``k`` hits
        name up to ``k`` different sources.
        """
        rt = self._live()
        query = check_query(query, rt.cfg.search)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInput("k must be between 1 and 1000", field="k")
        filters = Filters(tuple(kinds or ()), path_prefix or "", since, until)
        return run_search(rt, query, k, filters=filters, distinct_sources=distinct_sources)

    @audited
    @names_fields
    def build_context(self, query: str, live: Sequence[Mapping[str, Any]] | None = None,
                      conversation: Sequence[Mapping[str, Any]] | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> Payload:
        """The best context for ``query`` with the caller's live items, within ``budget``.

        Announces BuildDone (sizes and timings, never the query or the text).
        """
        from engine.flows.build import build_context

        started, t0 = time.time(), time.perf_counter()
        payload = build_context(self._live(), query, live=live, conversation=conversation,
                                budget=budget, overrides=config, fmt=fmt, mode=mode, now=now)
        if self._events.listened:
            self._events.emit(BuildDone.of(payload, current_caller().origin, started,
                                           (time.perf_counter() - t0) * 1000))
        return payload

    @audited
    @names_fields
    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False) -> RecallResult:
        """Search memory of coding sessions, or (``auto``) recent + related + failures.

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
            holder[0] = _with_vectors(holder[0], job)
            if query is None and not auto:
                return holder[0]
            result = recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                            since=since, types=types, k=k, budget=budget, task=task, fmt=fmt)
            return dataclasses.replace(result, indexed=holder[0].indexed,
                                       synced=holder[0].synced)
        return recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                      since=since, types=types, k=k, budget=budget, task=task, fmt=fmt)

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
        return _sync_with_vectors(holder[0], job)

    def _wait_ok(self, job_id: str) -> JobSnapshot:
        """Wait for a job; a failed one raises its error (internal_error for a bug)."""
        snap = self._jobs.wait(job_id)
        if snap.error is not None and snap.state == "failed":
            raise snap.error.to_error()
        return snap

    @audited
    @names_fields
    def sources(self, *, project: str | None = None) -> list[SourceInfo]:
        return src.list_ready(self._live().vault, project=project)

    @audited
    @names_fields
    def delete(self, source: str | int) -> DeleteResult:
        """Delete sources by id, uri or path: a folder deletes every source under it, a
        transcript file every segment of it, ``project:NAME`` every source of a project.
        Deleted means gone from every table, index and cache (``flows.deleting``)."""
        rt = self._live()
        if not str(source).strip().isdigit():  # a failed file the user lets go of
            self._alerts.forget_under(shown(Path(str(source).strip()).expanduser().resolve()))
        what = deleting.resolve(rt.vault, source)
        if what.empty:
            raise NotFound("no such source (give a source id, uri or path)", field="source")
        self._wait_ok(self._jobs.submit("delete", deleting.delete_work(rt, self._writer,
                                                                        what)).id)
        rt.audit.record("delete", os.getpid(), [str(i) for i in what.ids],
                           {"sources": len(what.ids), "paths": len(what.paths)})
        self._events.emit(SourcesChanged("delete", tuple(what.ids)))
        return DeleteResult(len(what.ids) + len(what.paths), tuple(what.ids))

    # -- keeping the data ----------------------------------------------------------
    @audited
    def backup(self, path: str, *, include_vectors: bool | None = None) -> BackupResult:
        """Write one encrypted backup file of the store to ``path`` (a folder gets a dated
        name in it), taken consistently while the engine keeps running; followed as a
        job of kind "backup" (bytes done of bytes in all). ``include_vectors`` (default:
        yes, for the memory backend) puts the vector index in it, so that a restore
        loads it instead of rebuilding it from the vault."""
        from engine.flows.backup import take_backup

        rt = self._live()
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
        shown = [0.0]

        def progress(done: int, total: int) -> None:
            job.bytes, job.bytes_total = done, total
            now = time.monotonic()
            if now - shown[0] >= 0.1 or done >= total:
                shown[0] = now
                self._jobs.progress(job)
            else:
                job.check()
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

    # -- health ------------------------------------------------------------------
    def status(self) -> Status:
        rt = self._live()
        rt.vault.guard.check()  # vault.db changed behind the engine: every page checked
        self._alerts.prune()  # a failed file deleted from disk is no longer a failure
        return health.status(rt, jobs_active=self._jobs.busy(), paused=self._jobs.paused,
                             alerts=dict(self.metrics().alerts))

    def metrics(self) -> MetricsSnapshot:
        snap = self._live().metrics.snapshot()
        return MetricsSnapshot.from_dict({**snap, "time": time.time()})

    def audit_event(self, method: str, *, caller_pid: int | None, ids: Sequence[str],
                    counts: Mapping[str, int]) -> None:
        """Record a call in the audit log (ids and counts only, never content)."""
        self._live().audit.record(method, caller_pid, ids, counts)

    @names_fields
    def audit(self, since: float | None = None, limit: int = 100) -> list[AuditEntry]:
        rt = self._live()
        rt.audit.flush()  # what calls queued so far is read back
        return [AuditEntry.from_dict(r) for r in rt.vault.audit(since, limit)]


def _sync_with_vectors(result: SyncResult, job: Any) -> SyncResult:
    """A sync's result once its vector stage ended: the texts the model embedded for it
    and the time of both stages."""
    seconds = (job.finished or time.time()) - (job.started or job.created)
    return dataclasses.replace(result, embedded=job.model_texts, seconds=round(seconds, 4))


def _with_vectors(result: RecallResult, job: Any) -> RecallResult:
    """``_sync_with_vectors`` for the parts of a recall result that a sync made."""
    return dataclasses.replace(result, **{
        name: _sync_with_vectors(getattr(result, name), job)
        for name in ("indexed", "synced") if getattr(result, name) is not None})


def _kept_name_key(vault: Vault) -> bytes | None:
    """The names' hash key a key rotation kept in the vault (engine/store/rekey.py)."""
    value = vault.get_meta("name_key")
    return bytes.fromhex(value) if value else None


def _job_progress(job: Any, progress: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    """A transcript sync's counts, copied onto its job (what `ctx recall --sync` shows)."""
    def update(counts: dict[str, Any]) -> None:
        for name in ("files_total", "files_done", "bytes_total", "bytes", "chunks", "current"):
            setattr(job, name, counts[name])
        progress()
    return update
