"""ContextEngine's core: opening and closing a store, ingestion, reading, health.

What callers follow and steer of the jobs is in ``engine.facade.jobs``; recall and
sync in ``engine.facade.sessions``; repair, backups and export in ``engine.facade.upkeep``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar, cast

from engine import paths as P
from engine.api import (
    AuditEntry,
    BuildDone,
    DeleteResult,
    ErrorInfo,
    JobChanged,
    MetricsSnapshot,
    Payload,
    SearchHit,
    SourceInfo,
    Status,
    WatchChanged,
    WatchReport,
)
from engine.calls import audited, current_caller, names_fields
from engine.config import Config, load_config
from engine.crypto import keys
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder
from engine.embedding.lazy import LazyEmbedder
from engine.errors import CtxError, EngineClosed, InvalidInput, ModelMismatch, NoSpace, NotFound
from engine.events import Announcer
from engine.facade.jobs import JobControl
from engine.facade.sessions import SessionMemory
from engine.facade.upkeep import Upkeep
from engine.flows import deleting, health, warming
from engine.flows import ingest as service
from engine.flows.audit_log import AuditLog
from engine.flows.ingest_alerts import IngestAlerts
from engine.flows.inputs import check_kinds, check_query, utf8
from engine.flows.interrupted import InterruptedJobs
from engine.flows.jobs import JobRunner
from engine.flows.keychange import open_key
from engine.flows.opening import lock_store, new_vault, open_vectors, prepare_root
from engine.flows.ranking import search as run_search
from engine.flows.runtime import Runtime
from engine.flows.vector_stage import VectorStage
from engine.flows.watching import WatchService
from engine.flows.writer import Writer
from engine.metrics import ALERT_VAULT_DAMAGED, ALERT_WRITER_FAILED, Metrics
from engine.pathnames import shown
from engine.store import sources as src
from engine.store.lock import DataDirLock
from engine.store.rows import Filters
from engine.store.vault import Vault
from engine.tokens import TokenCounter
from engine.types import ConversationTurn, LiveItem

log = logging.getLogger("ctx.engine")
F = TypeVar("F", bound=Callable[..., Any])
# How long close() waits for a warm-up stage in flight (reading the vector index takes
# about 5 s at 100k chunks; a model load cannot be cut short). Hand-set.
WARM_JOIN_S = 10.0


def _reading(method: F) -> F:
    """A reading call: it holds the vault's read gate while it runs, so that a key
    rotation's file swap (engine/store/gate.py) waits for it, and it for the swap."""
    @functools.wraps(method)
    def call(engine: Any, *args: Any, **kwargs: Any) -> Any:
        with engine.rt.vault.gate.shared():
            return method(engine, *args, **kwargs)
    return cast(F, call)


def store_exists(root: Path) -> bool:
    return keys.read_record(root) is not None


class ContextEngine(JobControl, SessionMemory, Upkeep):
    """The engine: see the package's docstring. Job control, coding-session memory
    (recall, sync) and upkeep (repair, backups, export) come from the mixins."""

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
                               on_stage=self._job_stored, on_death=self._writer_died)
        self._jobs.subscribe(lambda snap: self._events.emit(JobChanged(snap)))
        try:
            self._check_vectors(auto_repair)
            self._resume_deletes()
        except BaseException:
            self._jobs.stop()
            vectors.close()
            vault.close()
            raise
        self._watching = WatchService(self, emit=lambda r: self._events.emit(WatchChanged(r)))

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

    def _writer_died(self, error: ErrorInfo) -> None:
        """The writer thread ended by an error: every waiting job failed with it (the
        runner did that); the engine says so until it is restarted."""
        log.error("the writer thread ended (%s): jobs fail until the engine restarts",
                  error.name)
        self.rt.metrics.alert(ALERT_WRITER_FAILED, True,
                              f"the engine's writer stopped ({error.name}): nothing more is "
                              "stored until the engine restarts (`ctx stop`, then any "
                              "command starts it again)")

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
        self._watching.close()  # no change is queued while the jobs stop
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

    # -- watched folders ----------------------------------------------------------
    def watch(self, folders: Sequence[str] | None = None) -> WatchReport:
        """Follow the watched folders: the config's ``[ingest] watched_folders``, or
        exactly ``folders`` (an empty list stops watching). Each folder is ingested once
        when it starts being followed (unchanged files are skipped; stored files gone
        from it are deleted), then its changes are ingested and its deleted files
        deleted, as caller "watch". Returns the folders followed and those that cannot
        be (and why); what happens later comes as ``WatchChanged`` events."""
        self._live()
        return self._watching.follow(self._watching.configured() if folders is None
                                     else folders)

    def watched(self) -> WatchReport:
        """The folders followed now and those that cannot be (see ``watch``)."""
        return self._watching.last

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
            job = self._queue_paths(paths)
        self._stage.preload()  # the model loads while the text is stored
        if wait:
            self._jobs.wait(job.id)
        return job.id

    def _queue_paths(self, paths: Sequence[str], leave: Sequence[str] = ()) -> Any:
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
        job = self._jobs.submit("paths", work, inputs=tuple(resolved))
        self._interrupted.started(job.id, resolved, job.created)
        return job

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

    # -- reading -----------------------------------------------------------------
    @audited
    @names_fields
    @_reading
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
        filters = Filters(check_kinds(kinds), path_prefix or "", since, until)
        return run_search(rt, query, k, filters=filters, distinct_sources=distinct_sources)

    @audited
    @names_fields
    @_reading
    def build_context(self, query: str,
                      live: Sequence[LiveItem | Mapping[str, Any]] | None = None,
                      conversation: Sequence[ConversationTurn | Mapping[str, Any]] | None = None,
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
    @_reading
    def sources(self, *, project: str | None = None) -> list[SourceInfo]:
        return src.list_ready(self._live().vault, project=project)

    @audited
    @names_fields
    def delete(self, source: str | int, *, wait: bool = True) -> DeleteResult:
        """Delete sources by id, uri or path: a folder deletes every source under it, a
        transcript file every segment of it, ``project:NAME`` every source of a project.
        Deleted means gone from every table, index and cache (``flows.deleting``).

        A job of kind "delete" does it, a step at a time, so that reads and other calls
        go on meanwhile; what it names is hidden from every read as soon as it starts.
        ``wait=False`` returns at once with the job's id (``DeleteResult.job``): follow
        it with ``job``/``wait``."""
        rt = self._live()
        if not str(source).strip().isdigit():  # a failed file the user lets go of
            self._alerts.forget_under(shown(Path(str(source).strip()).expanduser().resolve()))
        what = deleting.resolve(rt.vault, source)
        if what.empty:
            raise NotFound("no such source (give a source id, uri or path)", field="source")
        # a job interrupted earlier must not bring them back when it is resumed
        self._interrupted.deleted(src.uris_of(rt.vault, what.ids) + list(what.paths))
        uris = src.uris_of(rt.vault, what.ids)
        job = self._jobs.submit("delete", deleting.delete_work(rt, self._writer, what))
        if any(u.startswith("transcript:") for u in uris):  # recall learned from them:
            self._refit(force=True)  # fitted again without them, after the delete
        rt.audit.record("delete", os.getpid(), [str(i) for i in what.ids],
                        {"sources": len(what.ids), "paths": len(what.paths)})
        result = DeleteResult(len(what.ids) + len(what.paths), tuple(what.ids), job=job.id)
        if wait:
            self._wait_ok(job.id)
        return result

    def _resume_deletes(self) -> None:
        """Sources a delete was removing when the engine stopped: removed now (a job)."""
        try:
            left = src.being_deleted(self.rt.vault)
        except CtxError as exc:
            log.warning("deletes not resumed (%s)", exc.name)
            return
        if left and not self.rt.vault.read_only:
            log.info("%d sources were being deleted: resuming", len(left))
            what = deleting.Deletion(left, [], False)
            self._jobs.submit("delete", deleting.delete_work(self.rt, self._writer, what,
                                                             resumed=True))

    # -- health ------------------------------------------------------------------
    @_reading
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


def _kept_name_key(vault: Vault) -> bytes | None:
    """The names' hash key a key rotation kept in the vault (engine/store/rekey.py)."""
    value = vault.get_meta("name_key")
    return bytes.fromhex(value) if value else None
