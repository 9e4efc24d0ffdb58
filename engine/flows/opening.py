"""Opening a store: check before touching, then open the vault and the vectors.

Order matters for "a failed open changes nothing on disk": the data dir's
layout is read first (nothing created, chmodded or locked), then the lock is
taken and the key unlocked, and only an open that succeeds hardens the files'
modes. A store is created only where the caller allows it: a missing or empty
folder with ``create``, a foreign folder only for ``ctx init``.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from engine import paths as P
from engine.blas import limit_blas_threads
from engine.config import Config, load_config
from engine.crypto import keys
from engine.crypto.rotation import Rotation
from engine.errors import CtxError, NoSpace, StoreLocked, VaultDamaged, VectorsDamaged
from engine.store.vault import sources as src
from engine.store.vault.core import Vault
from engine.store.vault.guard import PAGES_AT_OPEN_BYTES, vault_bytes
from engine.store.vault.integrity import failed_pages, pages_damaged
from engine.store.vault.layout import check_can_create, check_existing, read_layout
from engine.store.vault.lock import DataDirLock
from engine.store.vault.reserve import Reserve
from engine.store.vectors.ids import KeyedIds
from engine.store.vectors.index import ChromaVectors, OfflineVectors, VectorStore
from engine.store.vectors.memory import MemoryVectors
from engine.store.vectors.snapshot import SnapshotFile

log = logging.getLogger("ctx.engine")


def prepare_root(data_dir: str | Path | None, *, create: bool, explicit_init: bool = False
                 ) -> tuple[Path, bool]:
    """The data dir to open and whether a new store is to be made there.

    Raises (changing nothing) StoreNotInitialized for a missing store without
    ``create``, NotAStore for a folder that is not a store, and the damaged-store
    errors of ``engine.store.vault.layout``.
    """
    root = P.data_dir(data_dir)
    layout = read_layout(root)
    if layout.has_store:
        if explicit_init:
            check_can_create(layout, explicit_init=True)
        check_existing(layout)
        return root, False
    if not create:
        check_existing(layout)  # StoreNotInitialized or NotAStore, naming the path
    check_can_create(layout, explicit_init=explicit_init)
    note = P.claim_dir(root)  # refuses a shared folder; says so when it tightens one
    if note:
        log.warning(note)
    return root, True


def lock_store(root: Path) -> DataDirLock:
    lock = DataDirLock(P.lock_path(root))
    lock.acquire()
    return lock


# What the reserve lends an open on a full disk: the reader's WAL index (-shm, 32 KiB), twice.
WAL_INDEX_ROOM = 64 << 10


def new_vault(root: Path, key: bytes, cfg: Config) -> Vault:
    full = P.disk_full(root)  # it opens to be read; writes say "no space"
    reserve = Reserve(root)
    path = P.vault_path(root)
    vault_key = keys.derive(key, "vault")
    # A vault closed cleanly has no WAL files, and a reader must make its WAL index
    # (-shm) before it reads a page: on a full disk, the reserve lends it the room.
    needs_index = full and path.exists() and not path.with_name(path.name + "-shm").exists()
    lent = needs_index and reserve.lend(WAL_INDEX_ROOM)
    try:
        vault = Vault(path, vault_key, cache_mb=cfg.store.vault_cache_mb)
    except BaseException as refused:
        if lent:
            reserve.repay()  # a refused open leaves the data dir as it found it
        if isinstance(refused, VaultDamaged) and needs_index and P.disk_full(root):
            raise _without_room(refused, path, vault_key) from None
        raise
    vault.read_only = full
    vault.reserve = reserve
    if not full:
        reserve.ensure()
    P.harden(root)
    return vault


def _without_room(damage: VaultDamaged, path: Path, vault_key: bytes) -> CtxError:
    """What a vault that could not make its WAL index on a full disk says: the pages
    that fail their check, read from the file (it needs no room; only a small vault is
    read whole here, as an open checks one at once, ``PAGES_AT_OPEN_BYTES``, and only
    with no log beside it that would mend a page half written), else no_space; the
    open's own error where the file itself cannot be read."""
    wal = path.with_name(path.name + "-wal")
    try:
        if vault_bytes(path) <= PAGES_AT_OPEN_BYTES and not (wal.exists()
                                                             and wal.stat().st_size):
            bad = failed_pages(path, vault_key.hex())
            if bad:
                return pages_damaged(bad)
    except OSError:
        return damage
    return NoSpace("the disk holding the store is full: vault.db cannot be opened until "
                   "some space is freed (nothing was changed)")


def open_vectors(root: Path, cfg: Config, key: bytes, dim: int, vault: Vault) -> VectorStore:
    def dead(source_id: int) -> list[int]:
        return src.dead_chunks(vault, source_id)

    limit_blas_threads(cfg.search.blas_threads)  # before the rotation's QR (engine/blas.py)
    if cfg.store.vector_backend == "memory":
        return MemoryVectors(dim, dead, cfg.store,
                             snapshot=SnapshotFile(P.snapshot_path(root), key),
                             fingerprints=vault.chunk_fingerprints, version=vault.chunk_version)
    try:
        return ChromaVectors(cfg.store, P.vectors_path(root), Rotation(key, dim),
                             KeyedIds(key), keys.key_id(key), dead, vault.chunk_ids)
    except NoSpace:
        log.warning("disk full: the vector store stays offline until the store is reopened")
        return OfflineVectors(cfg.store.vector_backend, "disk full")


def rebuild_reason(vault: Vault, vectors: VectorStore) -> tuple[str | None, int, int]:
    """Why the vectors must be rebuilt now (None if not), the vault's count of chunks
    that have vectors (not those still waiting for the vector stage) and the vector
    count."""
    counts = src.counts(vault)
    chunks = counts["chunks"] - counts["chunks_waiting"]  # those that have vectors
    if vectors.backend == "memory":
        return ("memory backend" if chunks else None), chunks, 0
    if isinstance(vectors, OfflineVectors):
        return None, chunks, -1
    if vectors.legacy:
        return "older vector layout", chunks, -1
    count = vectors.count()
    if count == 0 and chunks > 0:
        return "vector store empty", chunks, count
    return None, chunks, count


def set_aside(path: Path) -> Path:
    """Move a damaged part out of the way (kept, never deleted) and return where."""
    target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        n += 1
    shutil.move(str(path), str(target))
    return target


def _damaged_file(path: Path) -> bool:
    """``path`` is there but is not a regular file (a folder, a device, a broken link)."""
    return (path.exists() or path.is_symlink()) and not path.is_file()


def repair_layout(data_dir: str | Path | None, *, passphrase: str | None = None,
                  check: Callable[[Path, Config, bytes], None] | None = None
                  ) -> dict[str, str]:
    """Before ``ctx repair`` opens the engine: set aside a ``vectors/`` that cannot be
    opened (or belongs to another store). The vault must be sound; its errors stand."""
    try:
        root, _ = prepare_root(data_dir, create=False)
    except VectorsDamaged:  # vectors/ is not a folder: what repair sets aside
        root = P.data_dir(data_dir)
    cfg = load_config(root)
    moved: dict[str, str] = {}
    snap = P.snapshot_path(root)
    if cfg.store.vector_backend != "embedded" and not _damaged_file(snap):
        return moved
    try:
        lock = lock_store(root)
    except StoreLocked:
        raise StoreLocked(f"another ctx engine has {root} open: stop it (the app or "
                          "`ctx serve`) and run `ctx repair` again") from None
    try:
        if _damaged_file(snap):  # a folder (or other non-file) where the sealed vectors go
            moved["vectors.snap"] = str(set_aside(snap))
            log.warning("vectors.snap is not a file: set aside as %s", moved["vectors.snap"])
    except BaseException:
        lock.release()
        raise
    if cfg.store.vector_backend != "embedded":
        lock.release()
        return moved
    try:
        key = keys.unlock_key(root, passphrase=passphrase)
        vault = Vault(P.vault_path(root), keys.derive(key, "vault"),
                      cache_mb=cfg.store.vault_cache_mb)
        try:  # open while the vector store is tried: it may read the vault
            dim = int(vault.get_meta("embedding_dim") or 0)
            vec_path = P.vectors_path(root)
            if vec_path.exists() or vec_path.is_symlink():
                try:
                    if not vec_path.is_dir():
                        raise VectorsDamaged("vectors/ is not a folder")
                    if dim:
                        open_vectors(root, cfg, key, dim, vault).close()
                except VectorsDamaged:
                    moved["vectors"] = str(set_aside(vec_path))
                    log.warning("vectors/ set aside as %s", moved["vectors"])
        finally:
            vault.close()
    finally:
        lock.release()
    return moved
