"""ContextEngine: the table of contents of the engine API.

Each public method is a short delegation to the member that owns its concern, each
member a plain class built in ``__init__`` with the handles and callbacks it needs:
``Lifecycle`` (``lifecycle``: open or closed, warm-up, close), ``Ingest`` (``ingest``),
``Reading`` (``reading``: search, build_context, sources, status, audit), ``JobControl``
(``jobs``), ``Recall`` (``recall``: recall and sync of coding sessions) and ``Keeping``
(``keeping``: delete, repair, compaction, key rotation, backups, export). What a caller
process's call leaves in the audit log (``audited``) and how input errors name their
field (``names_fields``) is said here, on the face, once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from engine.api import (
    AuditEntry,
    BackupResult,
    CompactResult,
    DeleteResult,
    Event,
    ExportResult,
    JobChanged,
    JobSnapshot,
    KeyChangeResult,
    MetricsSnapshot,
    Payload,
    RecallResult,
    RepairResult,
    SearchHit,
    SourceInfo,
    Status,
    SyncResult,
    WatchChanged,
    WatchReport,
)
from engine.calls import audited, names_fields
from engine.config import Config
from engine.embedding.base import Embedder
from engine.facade.ingest import Ingest
from engine.facade.jobs import JobControl, JobReports
from engine.facade.keeping import Keeping
from engine.facade.lifecycle import Lifecycle, check_pages_later, open_handles, open_with
from engine.facade.reading import Reading
from engine.facade.recall import Recall
from engine.flows.ingest.watching import WatchService
from engine.flows.jobs import JobRunner
from engine.store.vault.lock import DataDirLock
from engine.types import ConversationTurns, LiveItems


class ContextEngine:
    """The engine: see the package's docstring. Its members own the work; each method
    here names the member that does it."""

    def __init__(self, root: Path, cfg: Config, key: bytes, lock: DataDirLock,
                 embedder: Embedder | None, auto_repair: bool = True) -> None:
        self.data_dir = root
        self.config = cfg
        h = open_handles(root, cfg, key, embedder)
        # the runtime handles every member shares: the open stores, the single writer
        # and its job runner, the one subscription
        self.rt, self._writer, self._events = h.rt, h.writer, h.events
        reports = JobReports(h.interrupted, h.rt.audit, h.rt.metrics, h.events.emit)
        self._jobs = JobRunner(on_finish=reports.finished, stage=h.stage,
                               on_stage=reports.stored, on_death=reports.writer_died)
        self._jobs.subscribe(lambda snap: h.events.emit(JobChanged(snap)))
        self._life = Lifecycle(h.rt, lock, self._jobs, h.events.emit,
                               own_embedder=h.own_embedder)
        live = self._life.live
        self._recall = Recall(live, h.writer, self._jobs, h.stage)
        self._ingest = Ingest(live, h.writer, self._jobs, h.stage, h.alerts, h.interrupted)
        self._job_control = JobControl(live, self._jobs, h.interrupted, h.stage, root,
                                       queue_paths=self._ingest.queue_paths)
        self._reading = Reading(live, h.rt.vault.gate, self._jobs, h.alerts, h.events)
        self._keeping = Keeping(live, root, key, self._jobs, h.writer, h.alerts, h.interrupted,
                                refit=self._recall.refit, warm_done=self._life.warm_done)
        try:
            self._keeping.check_vectors(auto_repair)
            self._keeping.resume_deletes()
        except BaseException:
            self._jobs.stop()
            h.rt.vectors.close()
            h.rt.vault.close()
            raise
        check_pages_later(h.rt.vault)
        # the watched folders call this face's methods (as caller "watch"), like any client
        self._watching = WatchService(
            root, cfg.ingest.watched_folders, ingest=lambda paths: self.ingest(paths=paths),
            delete=self.delete, sources=self.sources,
            emit=lambda r: h.events.emit(WatchChanged(r)))

    # -- opening and closing (Lifecycle) -----------------------------------------
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
        return open_with(lambda root, cfg, key, lock: cls(root, cfg, key, lock, embedder,
                                                          auto_repair),
                         data_dir, config=config, passphrase=passphrase, create=create,
                         recovery_key=recovery_key)

    def warm_up(self, *, background: bool = True) -> threading.Thread | None:
        """Load the embedding model now (in a thread by default), not on the first query;
        then the vector index's in-memory part (``VectorStore.warm``: the exact index of
        a small store, the vector cache of a big one, about 5 s at 100k chunks); in a
        store big enough for the keyword lane's bounds, count its common terms too
        (0.3 s at 100k chunks). Each stage is announced (``Warming``) as it starts and
        ends, so a host can say "loading the model" and then "ready"."""
        return self._life.warm_up(background=background)

    def close(self) -> None:
        self._life.close(first=(self._watching.close, self._keeping.stop_tracked))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hear the engine's own changes, whoever caused them: JobChanged (every job
        snapshot change), SourcesChanged, BuildDone, AlertRaised and AlertCleared.

        ``listener`` runs on the thread where the change happened and must return
        quickly; its exceptions are logged, never raised. Returns an unsubscribe.
        """
        return self._events.subscribe(listener)

    # -- watched folders (flows.ingest.watching.WatchService) ---------------------------
    def watch(self, folders: Sequence[str] | None = None) -> WatchReport:
        """Follow the watched folders: the config's ``[ingest] watched_folders``, or
        exactly ``folders`` (an empty list stops watching). Each folder is ingested once
        when it starts being followed (unchanged files are skipped; stored files gone
        from it are deleted), then its changes are ingested and its deleted files
        deleted, as caller "watch". Returns the folders followed and those that cannot
        be (and why); what happens later comes as ``WatchChanged`` events."""
        self._life.live()
        return self._watching.follow(self._watching.configured() if folders is None
                                     else folders)

    def watched(self) -> WatchReport:
        """The folders followed now and those that cannot be (see ``watch``)."""
        return self._watching.last

    # -- ingest (Ingest) ---------------------------------------------------------
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
        return self._ingest.ingest(paths=paths, text=text, title=title, kind=kind,
                                      external_id=external_id, wait=wait)

    def ingest_conversation(self, turns: Sequence[Mapping[str, Any]], *, title: str,
                            uri: str | None = None, session_time: float | None = None,
                            wait: bool = False) -> str:
        """Queue a conversation (turns with speaker and text) as one source; returns a job id."""
        return self._ingest.ingest_conversation(turns, title=title, uri=uri,
                                                   session_time=session_time, wait=wait)

    # -- reading (Reading) -------------------------------------------------------
    @audited
    @names_fields
    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False) -> list[SearchHit]:
        """The top ``k`` chunks for ``query``, ranked as build_context ranks them.

        ``distinct_sources``: at most one chunk (the best) per source, so ``k`` hits
        name up to ``k`` different sources.
        """
        return self._reading.search(query, k, kinds=kinds, path_prefix=path_prefix,
                                    since=since, until=until,
                                    distinct_sources=distinct_sources)

    @audited
    @names_fields
    def build_context(self, query: str,
                      live: LiveItems | None = None, conversation: ConversationTurns | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> Payload:
        """The best context for ``query`` with the caller's live items, within ``budget``.

        Announces BuildDone (sizes and timings, never the query or the text).
        """
        return self._reading.build_context(query, live=live, conversation=conversation,
                                           budget=budget, config=config, fmt=fmt, mode=mode,
                                           now=now)

    @audited
    @names_fields
    def sources(self, *, project: str | None = None) -> list[SourceInfo]:
        """The stored sources, by id; a transcript once, its segments summed
        (``SourceInfo.segments``)."""
        return self._reading.sources(project=project)

    def status(self) -> Status:
        return self._reading.status()

    def metrics(self) -> MetricsSnapshot:
        return self._reading.metrics()

    def audit_event(self, method: str, *, caller_pid: int | None, ids: Sequence[str],
                    counts: Mapping[str, int]) -> None:
        """Record a call in the audit log (ids and counts only, never content)."""
        self._reading.audit_event(method, caller_pid=caller_pid, ids=ids, counts=counts)

    @names_fields
    def audit(self, since: float | None = None, limit: int = 100) -> list[AuditEntry]:
        return self._reading.audit(since, limit)

    # -- jobs (JobControl) -------------------------------------------------------
    @names_fields
    def job(self, job_id: str) -> JobSnapshot:
        return self._job_control.job(job_id)

    def jobs(self) -> list[JobSnapshot]:
        return self._job_control.jobs()

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """The job's snapshot once it ends, or as it stands after ``timeout`` seconds."""
        return self._job_control.wait(job_id, timeout)

    @names_fields
    def cancel_job(self, job_id: str) -> JobSnapshot:
        """Cancel a job: a queued one is dropped, a running one stops at its next safe
        point (between files, between embedding steps). Sources it fully stored stay;
        the one it was writing is not stored. Returns the job's snapshot (a running
        job still shows "running" until it stops: follow it with ``wait``)."""
        return self._job_control.cancel_job(job_id)

    def cancel_all(self) -> list[JobSnapshot]:
        """Cancel every queued and running job (for an app that quits); their snapshots."""
        return self._job_control.cancel_all()

    def interrupted_jobs(self) -> list[JobSnapshot]:
        """"paths" jobs an earlier run left unfinished (a quit that stopped them, a
        crash), oldest first: state "cancelled", ``interrupted`` True, their ``inputs``
        and last known counts. Each stays listed until resumed or dismissed."""
        return self._job_control.interrupted_jobs()

    def resume_interrupted(self, job_id: str) -> str:
        """Ingest an interrupted job's inputs again (what it stored before is skipped as
        unchanged); the new job's id. NotFound when no such job is listed."""
        return self._job_control.resume_interrupted(job_id)

    def dismiss_interrupted(self, job_id: str) -> None:
        """Stop listing an interrupted job (NotFound when it is not listed)."""
        self._job_control.dismiss_interrupted(job_id)

    def pause_ingestion(self) -> None:
        self._job_control.pause_ingestion()

    def resume_ingestion(self) -> None:
        self._job_control.resume_ingestion()

    # -- recall of coding sessions (Recall) --------------------------------------
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
        return self._recall.recall(query, auto=auto, project=project, branch=branch,
                                     since=since, types=types, k=k, budget=budget, task=task,
                                     fmt=fmt, index=index, sync=sync, cwd=cwd)

    @audited
    @names_fields
    def sync(self, paths: Sequence[str] | None = None) -> SyncResult:
        """Index what is new in the transcript folders (or ``paths``) since the last sync."""
        return self._recall.sync(paths)

    @names_fields
    def forget_folder(self, folder: str) -> bool:
        """Stop syncing a transcript folder added with ``recall(index=...)`` (one deleted
        from disk, say); what was stored from it stays (``delete`` removes that). False
        when it was not in the list (default folders and config.toml's are not)."""
        return self._recall.forget_folder(folder)

    # -- keeping the data (Keeping) ----------------------------------------------
    @audited
    @names_fields
    def delete(self, source: str | int, *, wait: bool = True) -> DeleteResult:
        """Delete sources by id, uri or path: a folder deletes every source under it, a
        transcript file every segment of it (so does the id or uri of any one segment: a
        session goes whole), ``project:NAME`` every source of a project.
        Deleted means gone from every table, index and cache (``flows.keeping.deleting``).

        A job of kind "delete" does it, a step at a time, so that reads and other calls
        go on meanwhile; what it names is hidden from every read as soon as it starts.
        ``wait=False`` returns at once with the job's id (``DeleteResult.job``): follow
        it with ``job``/``wait``."""
        return self._keeping.delete(source, wait=wait)

    def repair(self, *, wait: bool = True, reason: str = "repair") -> RepairResult:
        """Rebuild every vector from the vault (the single writer runs it, alerting
        while it does); a full repair also drops embedding-cache rows no chunk uses and
        rebuilds the keyword index. Without ``wait``, only the reason and job id."""
        return self._keeping.repair(wait=wait, reason=reason)

    def compact(self, *, wait: bool = True) -> CompactResult:
        """Give space back (``engine.flows.keeping.compaction``): vault.db's free pages, the
        sealed vector snapshot, the write-ahead log; a job of kind "compact", a step at
        a time. Without ``wait``, returns at once with the job id and the size before."""
        return self._keeping.compact(wait=wait)

    def rotate_key(self, *, wait: bool = True) -> KeyChangeResult:
        """Move the store to the data key that ``prepare_rotation`` wrote to key.json as
        pending, while the engine runs (``engine.flows.keeping.key_changes.rotate_work``): a job of
        kind "rotate" (``bytes`` of ``bytes_total`` of the vault exported, ``current``
        the part), during which reads go on and writes wait. ``key_id`` is the new key's,
        ``old_key_id`` the one it replaces; without ``wait``, returns at once with the
        job's id. Refused while a backup runs (it is sealed under the key it began with),
        and by a store whose vectors are kept in Chroma (rotate it closed instead)."""
        return self._keeping.rotate_key(wait=wait)

    @audited
    def backup(self, path: str, *, include_vectors: bool | None = None) -> BackupResult:
        """Write one encrypted backup file of the store to ``path`` (a folder gets a dated
        name in it), taken consistently while the engine keeps running; followed as a
        job of kind "backup" (bytes done of bytes in all). ``include_vectors`` (default:
        yes, for the memory backend) puts the vector index in it, so that a restore
        loads it instead of rebuilding it from the vault."""
        return self._keeping.backup(path, include_vectors=include_vectors)

    @audited
    def verify_backup(self, path: str) -> BackupResult:
        """Read a backup of this store whole and check every part of it, restoring nothing
        (BackupDamaged names what is wrong; BackupMismatch: another store's)."""
        return self._keeping.verify_backup(path)

    @audited
    def export(self, path: str, *, fmt: str = "jsonl", kind: str | None = None,
               project: str | None = None) -> ExportResult:
        """Write the sources (of ``kind`` and ``project``) to ``path`` as plaintext: one
        jsonl file (``ctx ingest`` of it stores them again) or a folder of markdown files.
        The text leaves the store's encryption: callers warn the user first."""
        return self._keeping.export(path, fmt=fmt, kind=kind, project=project)
