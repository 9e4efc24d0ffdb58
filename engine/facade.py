"""ContextEngine: the one public entry to ctx's core.

It owns a data dir (one engine at a time, by a lock file), unlocks the data
key, opens the encrypted vault and the vector store, and exposes ingest,
build_context, search, recall, delete and status. It is thread-safe: reads
run concurrently, writes go through the single writer (the job runner and
the vault's write lock).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from engine import paths as P
from engine.config import Config, load_config
from engine.context_inputs import check_query, utf8
from engine.crypto import keys
from engine.crypto.rotation import NameHasher, Rotation
from engine.embedding.base import Embedder
from engine.embedding.lazy import LazyEmbedder
from engine.errors import (
    EngineClosed,
    InvalidInput,
    ModelMismatch,
    NotFound,
    StoreNotInitialized,
)
from engine.ingest import service
from engine.ingest.jobs import JobRunner
from engine.ingest.pipeline import Writer
from engine.metrics import Metrics
from engine.retrieval.rank import search as run_search
from engine.runtime import Runtime
from engine.store import sources as src
from engine.store.lock import DataDirLock
from engine.store.vault import Filters, Vault
from engine.store.vectors import VectorStore
from engine.tokens import TokenCounter
from engine.types import ContextPayload, SearchHit

log = logging.getLogger("ctx.engine")


def store_exists(root: Path) -> bool:
    return keys.read_record(root) is not None


def init_store(data_dir: str | Path | None = None, *, passphrase: str | None = None,
               use_keychain: bool | None = None, config: Config | None = None) -> Path:
    """Create a new, empty store (its data key and vault). Refuses an existing one."""
    root = P.ensure_private_dir(P.data_dir(data_dir))
    cfg = config or load_config(root)
    with DataDirLock(P.lock_path(root)):
        key = keys.create_key(root, cfg.keys, passphrase=passphrase, use_keychain=use_keychain)
        Vault(P.vault_path(root), keys.derive(key, "vault"), cache_mb=cfg.store.vault_cache_mb
              ).close()
    return root


class ContextEngine:
    def __init__(self, root: Path, cfg: Config, key: bytes, lock: DataDirLock,
                 embedder: Embedder | None) -> None:
        self.data_dir = root
        self.config = cfg
        self._lock = lock
        self._closed = False
        vault = Vault(P.vault_path(root), keys.derive(key, "vault"),
                      cache_mb=cfg.store.vault_cache_mb)
        try:
            emb = embedder if embedder is not None else LazyEmbedder(cfg.embedding)
            self._check_model(vault, emb)
            rotation = Rotation(key, emb.dim)
            collection = "ctx-" + keys.key_id(key)
            vectors = VectorStore(cfg.store, P.vectors_path(root), rotation, collection)
        except BaseException:
            vault.close()
            raise
        self.rt = Runtime(cfg, root, vault, vectors, emb, TokenCounter.shared(),
                          NameHasher(key), Metrics())
        self._writer = Writer(cfg, vault, vectors, emb, self.rt.hasher, self.rt.counter)
        recovered = src.recover(vault)
        if recovered:
            log.warning("recovered %d sources left incomplete by a crash", len(recovered))
        self._writer.flush_tombstones()
        self._jobs = JobRunner(on_finish=self._job_finished)

    # -- lifecycle ---------------------------------------------------------------
    @classmethod
    def open(cls, data_dir: str | Path | None = None, *, config: Config | None = None,
             passphrase: str | None = None, embedder: Embedder | None = None,
             create: bool = True) -> ContextEngine:
        """Open (or, with ``create``, first create) the store in ``data_dir``.

        Raises StoreLocked when another engine has it open, WrongKey or
        KeyUnavailable when the key cannot be unlocked; nothing on disk changes then.
        """
        root = P.ensure_private_dir(P.data_dir(data_dir))
        cfg = config or load_config(root)
        lock = DataDirLock(P.lock_path(root))
        lock.acquire()
        try:
            if not store_exists(root):
                if not create:
                    raise StoreNotInitialized(f"no store at {root}: run `ctx init`")
                key = keys.create_key(root, cfg.keys, passphrase=passphrase)
            else:
                key = keys.unlock_key(root, passphrase=passphrase)
            return cls(root, cfg, key, lock, embedder)
        except BaseException:
            lock.release()
            raise

    def warm_up(self, *, background: bool = True) -> threading.Thread | None:
        """Load the embedding model now (in a thread by default), not on the first query."""
        load = getattr(self.rt.embedder, "load", None)
        if load is None:
            return None
        if not background:
            load()
            return None
        thread = threading.Thread(target=load, name="ctx-warm-up", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._jobs.stop()
        self.rt.vault.close()
        self._lock.release()

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

    def _job_finished(self, job: Any) -> None:
        self.rt.vault.add_audit("ingest_job", os.getpid(), [job.id],
                                {"files": job.files_done, "chunks": job.chunks,
                                 "errors": len(job.errors)})

    # -- ingestion ---------------------------------------------------------------
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
            raise InvalidInput("ingest takes either paths or text")
        if external_id is not None and (text is None or not str(external_id).strip()):
            raise InvalidInput("external_id needs a text and must not be blank")
        if text is not None:
            text = utf8(text, "text")
            work = service.ingest_text(rt, self._writer, text, title=title, kind=kind,
                                       uri=external_id)
            job = self._jobs.submit("text", work)
        else:
            resolved = [str(Path(p).expanduser().resolve()) for p in paths]
            job = self._jobs.submit("paths", service.ingest_paths(rt, self._writer, resolved))
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
        work = service.ingest_conversation(rt, self._writer, turns, title=title, uri=uri,
                                           session_time=session_time)
        job = self._jobs.submit("conversation", work)
        if wait:
            self._jobs.wait(job.id)
        return job.id

    def job(self, job_id: str) -> dict[str, Any]:
        return self._jobs.get(job_id)

    def jobs(self) -> list[dict[str, Any]]:
        return self._jobs.list()

    def wait(self, job_id: str, timeout: float | None = None) -> dict[str, Any]:
        return self._jobs.wait(job_id, timeout)

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Follow every job's progress; returns a function that unsubscribes."""
        return self._jobs.subscribe(listener)

    def pause_ingestion(self) -> None:
        self._jobs.pause()

    def resume_ingestion(self) -> None:
        self._jobs.resume()

    # -- reading -----------------------------------------------------------------
    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False) -> list[SearchHit]:
        """The top ``k`` chunks for ``query``, ranked as build_context ranks them.

        ``distinct_sources``: at most one chunk (the best) per source, so ``k`` hits
        name up to ``k`` different sources.
        """
        rt = self._live()
        query = check_query(query, rt.cfg.search)
        if not 1 <= k <= 1000:
            raise InvalidInput("k must be between 1 and 1000")
        filters = Filters(tuple(kinds or ()), path_prefix or "", since, until)
        return run_search(rt, query, k, filters=filters, distinct_sources=distinct_sources)

    def build_context(self, query: str, live: Sequence[Mapping[str, Any]] | None = None,
                      conversation: Sequence[Mapping[str, Any]] | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> ContextPayload:
        """The best context for ``query`` with the caller's live items, within ``budget``."""
        from engine.context import build_context

        return build_context(self._live(), query, live=live, conversation=conversation,
                             budget=budget, overrides=config, fmt=fmt, mode=mode, now=now)

    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False) -> dict[str, Any]:
        """Search memory of coding sessions, or (``auto``) recent + related + failures.

        ``index`` adds transcript folders (and syncs them); ``sync`` first ingests
        what is new in every known folder. Writes go through the single writer.
        """
        from engine.recall.service import recall

        rt = self._live()
        if index or sync:
            holder: dict[str, Any] = {}

            def work(job: Any, progress: Callable[[], None]) -> None:
                holder.update(recall(rt, self._writer, None, index=index, do_sync=sync))
            self._jobs.wait(self._jobs.submit("sync", work).id)
            if query is None and not auto:
                return holder
            result = recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                            since=since, types=types, k=k, budget=budget, task=task, fmt=fmt)
            return {**holder, **result}
        return recall(rt, self._writer, query, auto=auto, project=project, branch=branch,
                      since=since, types=types, k=k, budget=budget, task=task, fmt=fmt)

    def sync(self, paths: Sequence[str] | None = None) -> dict[str, Any]:
        """Index what is new in the transcript folders (or ``paths``) since the last sync."""
        from engine.recall.service import sync

        rt = self._live()
        holder: dict[str, Any] = {}
        job = self._jobs.submit("sync", lambda job, progress: holder.update(
            sync(rt, self._writer, paths)))
        snap = self._jobs.wait(job.id)
        if snap["state"] == "failed":
            from engine.errors import error_from_dict

            raise error_from_dict(snap["error"] or {})
        return holder

    def sources(self, *, project: str | None = None) -> list[dict[str, Any]]:
        return [s.to_dict() for s in src.list_ready(self._live().vault, project=project)]

    def delete(self, source: str | int) -> dict[str, Any]:
        """Delete a source by id, uri or path (a folder deletes every source under it)."""
        rt = self._live()
        ids = self._resolve_sources(source)
        if not ids:
            raise NotFound("no such source")
        def work(job: Any, progress: Callable[[], None]) -> None:
            src.delete_sources(rt.vault, ids)
            self._writer.flush_tombstones()
        self._jobs.wait(self._jobs.submit("delete", work).id)
        rt.vault.add_audit("delete", os.getpid(), [str(i) for i in ids], {"sources": len(ids)})
        return {"deleted": len(ids), "sources": ids}

    def _resolve_sources(self, source: str | int) -> list[int]:
        vault = self.rt.vault
        text = str(source).strip()
        if text.isdigit():
            return [r[0] for r in vault.query(
                "SELECT id FROM sources WHERE id = ? AND state = 'ready'", (int(text),))]
        candidates = [text]
        if "://" not in text and not text.startswith(("text:", "stdin:", "conversation:")):
            candidates.append(str(Path(text).expanduser().resolve()))
        for uri in candidates:
            rows = vault.query("SELECT id FROM sources WHERE uri = ? AND state = 'ready'", (uri,))
            if rows:
                return [r[0] for r in rows]
        folder = candidates[-1].rstrip("/") + "/"
        if Path(candidates[-1]).is_dir():
            return [r[0] for r in vault.query(
                "SELECT id FROM sources WHERE substr(uri, 1, ?) = ? AND state = 'ready'",
                (len(folder), folder))]
        return []

    # -- health ------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        rt = self._live()
        counts = src.counts(rt.vault)
        vector_ok = rt.vectors.healthy()
        return {
            "data_dir": str(rt.root), **counts,
            "vectors": rt.vectors.count() if vector_ok else None,
            "vector_backend": rt.cfg.store.vector_backend, "vector_store_ok": vector_ok,
            "model": rt.embedder.name, "dim": rt.embedder.dim,
            "model_loaded": getattr(rt.embedder, "loaded", True),
            "jobs_active": self._jobs.busy(), "ingestion_paused": self._jobs.paused,
            "store_bytes": _dir_size(rt.root), "alerts": rt.metrics.snapshot()["alerts"],
        }

    def metrics(self) -> dict[str, Any]:
        snap = self._live().metrics.snapshot()
        snap["time"] = time.time()
        return snap

    def audit_event(self, method: str, *, caller_pid: int | None, ids: Sequence[str],
                    counts: Mapping[str, int]) -> None:
        """Record a call in the audit log (ids and counts only, never content)."""
        self._live().vault.add_audit(method, caller_pid, list(ids), dict(counts))

    def audit(self, since: float | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return self._live().vault.audit(since, limit)


def _dir_size(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total
