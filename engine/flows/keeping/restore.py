"""Restoring a backup into a data dir: on a fresh machine, a new folder, or over the store
it was taken from (``replace``).

Everything is first written to a staging folder beside the data dir
(``.NAME.restoring-XXXX``, owner-only, marked by a ``restore.partial`` file while it
fills) and checked whole: a wrong key, a backup truncated, changed or of another
store stops the restore with a named error before the data dir is touched. Then
the staging folder takes the data dir's place in one step (Linux's
``renameat2(RENAME_EXCHANGE)``; a rename where the data dir does not exist yet).
A store replaced is kept, moved to ``NAME.replaced-DATE``, never deleted. Killed
at any moment, the data dir holds the old store or the restored one, whole; a
staging folder left behind still has its mark, and the next restore removes it.

The restored store keeps the backup's key and its wrappings: it opens with the
passphrase and the recovery key of the day the backup was taken. A backup of a
store whose key was in an OS keychain has its key put in this machine's keychain
(a new entry of its own), or, where there is none, under ``new_passphrase``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import logging
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import paths as P
from engine.api import RestoreResult
from engine.backup import format as F
from engine.config import load_config
from engine.crypto.keys import (
    NO_PASSPHRASE,
    KeyRecord,
    account_for,
    headless_passphrase,
    keychain_available,
    keychain_set,
    passphrase_wrap,
    read_record,
    record_from,
    write_record,
)
from engine.errors import (
    BackupDamaged,
    BackupMismatch,
    KeyUnavailable,
    NotAStore,
    StoreExists,
)
from engine.flows.keeping.backup import backup_key, decode_vectors, open_backup_file
from engine.flows.opening import lock_store
from engine.store.vault.layout import check_existing, read_layout
from engine.store.vectors.snapshot import SnapshotFile

log = logging.getLogger("ctx.backup")

MARK = "restore.partial"
ENTRY_FILES = {"vault.db": "vault.db", "config.toml": "config.toml"}
Progress = Callable[[int, int], None]


def _staging_prefix(root: Path) -> str:
    return f".{root.name}.restoring-"


def _clear_stale(root: Path) -> None:
    """Deal with what a killed restore left beside the data dir: a staging folder (marked
    partial, or still empty) is removed; a store swapped out but not yet renamed (the only
    unmarked one there can be) is kept, under the name a replaced store gets."""
    for old in root.parent.glob(_staging_prefix(root) + "*"):
        if (old / MARK).is_file() or not any(old.iterdir()):
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.rename(_kept_name(root))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (38, 22, 95):  # ENOSYS, EINVAL (file system), EOPNOTSUPP
        return False
    raise OSError(err, os.strerror(err), str(a))


def _check_target(root: Path, header: F.Header, replace: bool) -> bool:
    """Whether a store is there (to replace). StoreExists without ``replace``;
    BackupMismatch when the store there is another one than the backup's."""
    layout = read_layout(root)
    has_store = layout.has_key or layout.has_vault or layout.has_vectors
    if not has_store and layout.parts:
        check_existing(layout)  # leftovers of a store (a WAL, vectors.snap): named, kept
    if not has_store:
        if layout.foreign:
            raise NotAStore(f"{root} is not empty and holds no ctx store: restore into an "
                            "empty or new folder (--data-dir)")
        return False
    if not replace:
        raise StoreExists(f"a store already exists in {root}: restore into another folder "
                          "(--data-dir), or add --replace to put this backup in its place "
                          "(the store there is kept aside)")
    record = read_record(root)
    if record is None or record.store_id != header.store_id:
        raise BackupMismatch(f"this backup is of another store than the one in {root}: "
                             "--replace only rolls a store back to a backup of its own; "
                             "restore into another folder (--data-dir), or move that one away")
    return True


def _restored_record(header: F.Header, key: bytes, root: Path,
                     new_passphrase: str | None) -> KeyRecord:
    """The key record of the restored store (see the module doc)."""
    wraps: dict[str, Any] = dict(header.wraps)
    try:
        base = record_from({"version": 2, **{k: v for k, v in wraps.items()
                                              if k != "keychain_account"},
                            "store_id": header.store_id})
    except Exception as exc:  # noqa: BLE001 - a header edit the tags did not cover
        raise BackupDamaged(f"the backup is damaged: its key record ({exc})") from None
    if base.method == "passphrase":
        return base
    if keychain_available():
        account = account_for(header.store_id, header.key_id) + ":" + secrets.token_hex(4)
        keychain_set(account, key)
        return dataclasses.replace(base, keychain_account=account)
    given = new_passphrase or headless_passphrase()
    if not given:
        raise KeyUnavailable("this backup's key was kept in an OS keychain and none is usable "
                             "here: give a passphrase for the restored store (CTX_PASSPHRASE)")
    cfg = load_config(None)
    return dataclasses.replace(base, method="passphrase", keychain_account="",
                               **{**NO_PASSPHRASE, **passphrase_wrap(key, given, cfg.keys)})


def restore_backup(path: str | os.PathLike[str], data_dir: str | os.PathLike[str] | None = None,
                   *, passphrase: str | None = None, recovery_key: str | None = None,
                   replace: bool = False, new_passphrase: str | None = None,
                   progress: Progress | None = None) -> RestoreResult:
    """Restore the backup at ``path`` into ``data_dir`` (see the module doc)."""
    t0 = time.perf_counter()
    root = P.data_dir(data_dir)
    with open_backup_file(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        header, aad = F.read_header(fh)
        key = backup_key(header, passphrase=passphrase, recovery_key=recovery_key)
        had_store = _check_target(root, header, replace)
        root.parent.mkdir(parents=True, exist_ok=True)
        lock = lock_store(root) if had_store else None
        try:
            _clear_stale(root)
            staging = root.parent / (_staging_prefix(root) + secrets.token_hex(4))
            staging.mkdir(mode=0o700)
            try:
                (staging / MARK).touch(mode=0o600)
                counts = _unpack(fh, header, aad, key, staging, size, progress)
                write_record(staging, _restored_record(header, key, root, new_passphrase))
                P.harden(staging)
                P.fsync_path(staging)
                replaced = _swap(staging, root, had_store)
            except BaseException:
                if (staging / MARK).exists():  # still the staging folder: never went live
                    shutil.rmtree(staging, ignore_errors=True)
                raise
        finally:
            if lock is not None:
                lock.release()
    log.info("backup restored: %d chunks", counts.get("chunks", 0))
    return RestoreResult(str(root), header.store_id, header.key_id, header.created,
                         int(counts.get("sources", 0)), int(counts.get("chunks", 0)),
                         int(counts.get("vectors", 0)), size,
                         round(time.perf_counter() - t0, 3), replaced)


def _unpack(fh: Any, header: F.Header, aad: bytes, key: bytes, staging: Path, size: int,
            progress: Progress | None) -> dict[str, Any]:
    """Every entry of the backup into ``staging``, checked whole; the manifest's counts."""
    reader = F.BackupReader(fh, header, aad, key)
    manifest = F.read_manifest(reader, header)
    for name, n in manifest.entries:
        if name == "vectors":
            snap = decode_vectors(b"".join(reader.chunks(n)))
            SnapshotFile(P.snapshot_path(staging), key).save(snap)
            continue
        if name not in ENTRY_FILES:
            raise BackupDamaged(f"the backup is damaged: it holds an unknown entry {name!r}")
        if name == "config.toml" and n == 0:
            continue  # the store had no config.toml: nor will the restored one
        fd = os.open(staging / ENTRY_FILES[name], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            for piece in reader.chunks(n):
                out.write(piece)
                if progress is not None:
                    progress(reader.read_bytes, size)
            out.flush()
            os.fsync(out.fileno())
    reader.finish()
    if not (staging / "vault.db").is_file():
        raise BackupDamaged("the backup is damaged: it holds no vault")
    return dict(manifest.counts)


def _kept_name(root: Path) -> Path:
    kept = root.parent / f"{root.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}"
    while kept.exists():
        kept = kept.with_name(kept.name + "-1")
    return kept


def _swap(staging: Path, root: Path, had_store: bool) -> str | None:
    """Put ``staging`` where ``root`` is, then unmark it; the path the replaced store went
    to, if any. Until the mark goes, the staging folder is known for one (_clear_stale)."""
    if not root.exists():
        os.rename(staging, root)
        old = None
    elif _exchange(staging, root):
        old = staging  # now holds what the data dir held
    else:  # no atomic swap here: the data dir is missing for a moment between the two
        old = root.parent / (_staging_prefix(root) + "old-" + secrets.token_hex(4))
        os.rename(root, old)
        os.rename(staging, root)
    P.fsync_path(root.parent)
    (root / MARK).unlink()
    if old is None:
        return None
    if not had_store:
        shutil.rmtree(old, ignore_errors=True)  # an empty folder, or stray non-store files
        return None
    kept = _kept_name(root)
    os.rename(old, kept)
    return str(kept)
