"""A small in-memory engine with ContextEngine's public API, for wire tests.

It takes the real data dir lock (engine.store.vault.lock), so "one server per data
dir" behaves as with the real engine, and it has hooks to make calls slow or
fail, which the real engine cannot be asked to do on purpose.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.api import (
    Alert,
    AuditEntry,
    BackupResult,
    CompactResult,
    DeleteResult,
    ExportResult,
    Histogram,
    JobSnapshot,
    KeyChangeResult,
    MetricsSnapshot,
    Payload,
    PayloadItem,
    RecallHit,
    RecallResult,
    SearchHit,
    SourceInfo,
    Status,
    SyncResult,
    VectorMemory,
)
from engine.errors import ConfigError, EmptyQuery, NotFound
from engine.flows.jobs import JobRunner
from engine.paths import data_dir as resolve_data_dir
from engine.paths import ensure_private_dir, lock_path
from engine.store.vault.lock import DataDirLock
from engine.types import ConversationTurn, LiveItem


class FakeEngine:
    def __init__(self, root: Path) -> None:
        self.data_dir = root
        self._lock = DataDirLock(lock_path(root))
        self._lock.acquire()
        self._mutex = threading.Lock()
        self.docs: dict[str, str] = {}
        self._jobs: dict[str, JobSnapshot] = {}
        self.audits: list[tuple[str, int | None, list[str], dict[str, int]]] = []
        self.writes = 0
        self.release_ingest = threading.Event()
        self.release_ingest.set()
        self.closed = False
        self._runner: JobRunner | None = None  # the engine's own job runner, for failed jobs

    def _failed_job(self) -> JobSnapshot:
        """A job that fails on a bug, run by the engine's real JobRunner."""
        if self._runner is None:
            self._runner = JobRunner()

        def work(job: Any, progress: Any) -> None:
            raise RuntimeError("a bug while holding secret user text")
        return self._runner.wait(self._runner.submit("sync", work).id, timeout=30)

    @classmethod
    def open(cls, data_dir: str | Path | None = None) -> FakeEngine:
        return cls(ensure_private_dir(resolve_data_dir(data_dir)))

    def close(self) -> None:
        self.closed = True
        if self._runner is not None:
            self._runner.stop(timeout=5)
        self._lock.release()

    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str:
        self.release_ingest.wait(30)
        job_id = uuid.uuid4().hex[:12]
        with self._mutex:
            uri = title or f"text:{len(self.docs)}"
            if text is not None:
                self.docs[uri] = text
                self.writes += 1
            self._jobs[job_id] = JobSnapshot(
                id=job_id, kind="text" if text is not None else "paths", state="done",
                created=time.time(), files_total=len(paths), files_done=len(paths),
                chunks=1 if text else 0, bytes=len(text or ""),
                sources=(len(self.docs),) if text is not None else ())
        return job_id

    def job(self, job_id: str) -> JobSnapshot:
        if job_id == "bugjob":
            return self._failed_job()
        if job_id not in self._jobs:
            raise NotFound(f"no job {job_id}", job_id=job_id)  # as engine.flows.jobs does
        return self._jobs[job_id]

    def jobs(self) -> list[JobSnapshot]:
        return list(self._jobs.values())

    def cancel_job(self, job_id: str) -> JobSnapshot:
        return self.job(job_id)  # the fake's jobs are done as soon as they are made

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        return self.job(job_id)

    def build_context(self, query: str,
                      live: Sequence[LiveItem | Mapping[str, Any]] | None = None,
                      conversation: Sequence[ConversationTurn | Mapping[str, Any]] | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> Payload:
        if not query.strip():
            raise EmptyQuery("query is empty")
        if config:  # as engine.config_base refuses an unknown key: it names the keys
            names = ", ".join(sorted(config))
            raise ConfigError(f"unknown config key: {names}", keys=sorted(config))
        item = PayloadItem(kind="section", source="fake://echo", title="echo", time=now,
                           tokens=1, score=1.0, lanes={"keyword": 1}, why="snippet")
        return Payload(context=f"echo:{query}", total_tokens=1, budget=budget,
                       items=(item,), timings={"total": 0.1}, format=fmt or "text")

    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False) -> list[SearchHit]:
        if query == "raise:not_found":
            raise NotFound("nothing", what="test")
        if query == "raise:bug":
            raise RuntimeError("a bug with secret user text")
        if query.startswith("sleep:"):
            time.sleep(float(query.split(":", 1)[1]))
        if query.startswith("big:"):
            return [SearchHit(chunk_id=0, source_id=0, source="s", title="t", kind="section",
                              source_kind="text", text="x" * int(query[4:]), score=1.0,
                              lanes={})]
        return [SearchHit(chunk_id=i, source_id=i, source=f"fake://{i}", title=query,
                          kind="section", source_kind="text", text=f"{query}#{i}",
                          score=1.0 / (i + 1), lanes={"keyword": i + 1}) for i in range(k)]

    def recall(self, query: str | None = None, **kw: Any) -> RecallResult:
        """``k`` echoed back as the number of hits (one per rank)."""
        return RecallResult(hits=tuple(RecallHit(**h.__dict__, line="s · d · b", excerpt=h.text)
                                       for h in self.search(query or "q", kw.get("k", 10))))

    def sources(self, *, project: str | None = None) -> list[SourceInfo]:
        with self._mutex:
            return [SourceInfo(id=i, uri=u, kind="text", title=u, fmt="text", content_hash="",
                               bytes=len(t), created_at=None, ingested_at=0.0, n_chunks=1,
                               tokens=len(t), project=None)
                    for i, (u, t) in enumerate(sorted(self.docs.items()))]

    def delete(self, source: str | int, *, wait: bool = True) -> DeleteResult:
        with self._mutex:
            if source not in self.docs:
                raise NotFound("no such source", source=source)
            del self.docs[str(source)]
            self.writes += 1
        return DeleteResult(1)

    def compact(self, *, wait: bool = True) -> CompactResult:
        return CompactResult("", 10, 5)

    def rotate_key(self, *, wait: bool = True) -> KeyChangeResult:
        return KeyChangeResult("rotate", "new", old_key_id="old", job="r" * 16)

    def forget_folder(self, folder: str) -> bool:
        return folder == "known"

    def sync(self, paths: Sequence[str] | None = None) -> SyncResult:
        failed = self._failed_job() if list(paths or ()) == ["raise:jobbug"] else None
        if failed is not None and failed.error is not None:  # as ContextEngine.sync re-raises
            raise failed.error.to_error()
        return SyncResult(files=len(paths or []), folders=tuple(paths or ()))

    def status(self) -> Status:
        return Status(data_dir=str(self.data_dir), sources=len(self.docs), chunks=0, tokens=0,
                      bytes=0, vectors=0, vector_backend="memory", vector_store_ok=True,
                      vectors_in_memory=VectorMemory("none", "empty", 0, 0), model="fake",
                      dim=8, model_loaded=True, model_backend=None,
                      model_document_precision="float32", model_query_precision="float32",
                      jobs_active=False, ingestion_paused=False, store_bytes=0, alerts={})

    def metrics(self) -> MetricsSnapshot:
        return MetricsSnapshot(
            histograms={"context_engine.build.duration_ms": Histogram(1, 0.1, 0.1, 0.1, 0.1)},
            counters={}, gauges={}, alerts={"context_engine.fake": Alert(
                "context_engine.fake", since=1.0, count=1, last=1.0)}, time=time.time())

    def audit_event(self, method: str, *, caller_pid: int | None, ids: list[str],
                    counts: dict[str, int]) -> None:
        """What the server records itself (``shutdown``): the engine audits its own calls."""
        self.audits.append((method, caller_pid, list(ids), dict(counts)))

    def audit(self, since: float | None = None, limit: int = 100) -> list[AuditEntry]:
        return [AuditEntry(time=0.0, method=m, caller_pid=p, ids=tuple(i), counts=c)
                for m, p, i, c in self.audits[-limit:]]

    # No store to copy: the wire tests that use this fake never ask for these.
    def backup(self, path: str, *, include_vectors: bool | None = None) -> BackupResult:
        raise NotImplementedError("FakeEngine keeps no store to back up")

    def verify_backup(self, path: str) -> BackupResult:
        raise NotImplementedError("FakeEngine keeps no store to back up")

    def export(self, path: str, *, fmt: str = "jsonl", kind: str | None = None,
               project: str | None = None) -> ExportResult:
        raise NotImplementedError("FakeEngine keeps no store to export")
