"""Opening and closing an engine: ``open_with`` (the data dir's lock and key, then the
engine), ``open_handles`` (the open store's runtime handles every member is built from)
and :class:`Lifecycle`, the member that knows whether the engine is open (``live``),
warms it up and closes it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from engine import paths as P
from engine.config import Config, load_config
from engine.crypto import keys
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder
from engine.embedding.lazy_embedder import LazyEmbedder
from engine.errors import CtxError, EngineClosed, ModelMismatch, NoSpace
from engine.events import Announcer
from engine.flows import warming
from engine.flows.audit_log import AuditLog
from engine.flows.ingest.alerts import IngestAlerts
from engine.flows.ingest.interrupted import InterruptedJobs
from engine.flows.ingest.vector_stage import VectorStage
from engine.flows.ingest.writer import Writer
from engine.flows.jobs import JobRunner
from engine.flows.keeping.key_changes import open_key
from engine.flows.opening import lock_store, new_vault, open_vectors, prepare_root
from engine.flows.runtime import Runtime
from engine.metrics import ALERT_VAULT_DAMAGED, Metrics
from engine.store.vault import sources as src
from engine.store.vault.core import Vault
from engine.store.vault.lock import DataDirLock
from engine.tokens import TokenCounter

log = logging.getLogger("ctx.engine")
E = TypeVar("E")
# How long close() waits for a warm-up stage in flight (reading the vector index takes
# about 5 s at 100k chunks; a model load cannot be cut short). Hand-set.
WARM_JOIN_S = 10.0


def store_exists(root: Path) -> bool:
    return keys.read_record(root) is not None


def open_with(make: Callable[[Path, Config, bytes, DataDirLock], E],
              data_dir: str | Path | None, *, config: Config | None, passphrase: str | None,
              create: bool, recovery_key: str | None) -> E:
    """``make(root, config, key, lock)`` once the data dir is locked and its key unlocked
    (or, with ``create``, first made); see ``ContextEngine.open``."""
    root, fresh = prepare_root(data_dir, create=create)
    cfg = config or load_config(root)
    lock = lock_store(root)
    try:
        if fresh and not store_exists(root):
            key = keys.create_key(root, cfg.keys, passphrase=passphrase)
        else:
            key = open_key(root, passphrase=passphrase, recovery_key=recovery_key)
        return make(root, cfg, key, lock)
    except BaseException:
        if fresh and not store_exists(root):  # a store not made leaves no lock file
            lock.discard()
        lock.release()
        raise


@dataclass(frozen=True)
class Handles:
    """The open store's runtime handles, which ``ContextEngine`` builds its members from."""

    rt: Runtime
    events: Announcer  # the one subscription (``ContextEngine.subscribe``)
    writer: Writer
    interrupted: InterruptedJobs
    alerts: IngestAlerts
    stage: VectorStage
    own_embedder: bool  # closed with the engine


def open_handles(root: Path, cfg: Config, key: bytes, embedder: Embedder | None) -> Handles:
    """Open the vault and the vector store under ``key`` and make the parts that run on
    them; sources a crash left incomplete are recovered."""
    vault = new_vault(root, key, cfg)
    try:
        emb = embedder if embedder is not None else LazyEmbedder(cfg.embedding)
        _check_model(vault, emb)
        vectors = open_vectors(root, cfg, key, emb.dim, vault)
    except BaseException:
        vault.close()
        raise
    events = Announcer()
    rt = Runtime(cfg, root, vault, vectors, emb, TokenCounter.shared(),
                 NameHasher(key, _kept_name_key(vault)), Metrics(on_change=events.emit),
                 AuditLog(vault))
    vault.guard.on_damage = lambda exc: rt.metrics.alert(ALERT_VAULT_DAMAGED, True, exc.message)
    writer = Writer(cfg, vault, vectors, emb, rt.hasher, rt.counter)
    _recover(vault)
    interrupted = InterruptedJobs(vault)
    alerts = IngestAlerts(rt.metrics)
    return Handles(rt, events, writer, interrupted, alerts,
                   VectorStage(rt, writer, alerts), own_embedder=embedder is None)


def check_pages_later(vault: Vault) -> None:
    """A big vault's pages checked in a thread, started once the open has filled the
    vector index: hashing every page takes a core for seconds (a 5.5 GB vault, 1M
    chunks), and beside the read of the sealed vectors it made that open 2-4 times
    slower (docs/performance.md, issue 35). SQLCipher checks every page it reads
    meanwhile."""
    if not vault.pages_checked:
        vault.guard.check_pages_later()


class Lifecycle:
    """Whether the engine is open, its warm-up, and its close (the stores, the lock)."""

    def __init__(self, rt: Runtime, lock: DataDirLock, runner: JobRunner,
                 emit: Callable[..., None], *, own_embedder: bool) -> None:
        self.lock = lock  # the data dir's, released at close
        self.closed = False
        self._rt = rt
        self._runner = runner
        self._emit = emit
        self._own_embedder = own_embedder
        self._warming: threading.Thread | None = None

    def live(self) -> Runtime:
        """The runtime handles; EngineClosed once the engine is closed."""
        if self.closed:
            raise EngineClosed("the engine is closed")
        return self._rt

    def warm_up(self, *, background: bool) -> threading.Thread | None:
        waiting = self._waiting_sources()
        thread = warming.warm_up(self._rt, self._emit, lambda: self.closed,
                                 background=background)
        self._warming = thread  # close() waits for it
        if waiting:  # sources a crash or a stop left waiting get their vectors in a
            # background job (kind "vectors"; its stage waits for the model to load)
            self._runner.submit("vectors", lambda job, progress: None)
        return thread

    def warm_done(self) -> None:
        """Wait for a warm-up in a thread (it reads the vault on connections of its own
        thread, which a key rotation closes)."""
        thread = self._warming
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _waiting_sources(self) -> int:
        """Sources left waiting for their vectors (a crash, a stop, a cancel), which the
        warm-up's background job ("vectors") resumes; 0 on a read-only store."""
        try:
            waiting = int(src.counts(self._rt.vault)["sources_waiting"])
        except CtxError as exc:  # the next ingest adopts them instead
            log.warning("vectors not resumed (%s)", exc.name)
            return 0
        if waiting and not self._rt.vault.read_only:
            log.info("%d sources wait for their vectors: resuming", waiting)
            return waiting
        return 0

    def close(self, *, first: Sequence[Callable[[], None]]) -> None:
        """Run ``first`` (what must stop before the jobs: watching, backups), stop the
        jobs and a warm-up in flight, write the audit log, close the stores, release the
        lock. A second close does nothing."""
        if self.closed:
            return
        for stop in first:
            stop()
        self.closed = True
        self._runner.stop()
        warm = self._warming
        if warm is not None and warm is not threading.current_thread():
            warm.join(WARM_JOIN_S)  # a stage in flight ends before the stores close
        rt = self._rt
        rt.audit.close()  # what calls and jobs queued is written before the vault closes
        try:
            rt.vectors.close()
        finally:
            rt.vault.close()
            P.harden(rt.root)
            self.lock.release()
            if self._own_embedder:
                close = getattr(rt.embedder, "close", None)
                if close is not None:
                    close()


def _check_model(vault: Vault, emb: Embedder) -> None:
    name, dim = vault.get_meta("embedding_model"), vault.get_meta("embedding_dim")
    if name is None:
        vault.set_meta("embedding_model", emb.name)
        vault.set_meta("embedding_dim", str(emb.dim))
    elif name != emb.name or int(dim or 0) != emb.dim:
        raise ModelMismatch(
            f"this store's vectors were made by {name} ({dim} dims); the configured model "
            f"is {emb.name} ({emb.dim} dims). Use the same model or a new data dir.")


def _recover(vault: Vault) -> None:
    """Sources a crash left pending are removed (on a full disk too: the reserved space
    is given back for it)."""
    try:
        recovered = vault.with_room(lambda: src.recover(vault))
    except NoSpace:
        recovered = []
        log.warning("disk full: sources left pending by a crash are removed at the next "
                    "open with room")
    if recovered:
        log.warning("recovered %d sources left incomplete by a crash", len(recovered))


def _kept_name_key(vault: Vault) -> bytes | None:
    """The names' hash key a key rotation kept in the vault (engine/store/vault/rekey.py)."""
    value = vault.get_meta("name_key")
    return bytes.fromhex(value) if value else None
