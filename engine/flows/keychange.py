"""Key changes that touch the data: a new data key (rotation), and finishing one that a
crash cut short.

A rotation runs on a closed store (it holds the store's lock) in four steps, each
atomic on its own:

1. key.json gets ``pending``: the new key wrapped as the old one is (under the
   same passphrase, in a new keychain entry, for the same recovery key);
2. the vault is rekeyed (SQLCipher's ``PRAGMA rekey``, one transaction);
3. the sealed vectors are sealed again under the new key (an embedded Chroma
   store, whose rotation and ids come from the key, is removed: it is rebuilt
   from the vault at the next open);
4. key.json names the new key alone; the old keychain entry is deleted.

Killed anywhere, the next open (``open_key``) reads ``pending``, asks the vault
which key opens it, and finishes the rotation (after step 2) or undoes it
(before): the store always opens with the old key or the new one, and nothing
is lost. Backups taken before keep the old key, wrapped as it was then.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from engine import paths as P
from engine.api import KeyChangeResult
from engine.config import load_config
from engine.crypto import key_changes
from engine.crypto import recovery as R
from engine.crypto.keys import (
    NO_PASSPHRASE,
    KeyRecord,
    account_for,
    derive,
    headless_passphrase,
    key_id,
    key_lock,
    keychain_delete,
    keychain_set,
    legacy_account,
    new_store_id,
    passphrase_wrap,
    read_record,
    unlock_wraps,
    unwrap_passphrase,
    write_record,
)
from engine.errors import KeyUnavailable, StoreNotInitialized, WrongKey
from engine.flows.opening import lock_store, prepare_root
from engine.store.rekey import checkpoint, opens_with, rekey_vault
from engine.store.snapshot import SnapshotFile

log = logging.getLogger("ctx.keys")

RETIRED_VECTORS = "vectors.old-"  # an embedded store of a retired key, on its way out


def open_key(root: Path, *, passphrase: str | None = None,
             recovery_key: str | None = None) -> bytes:
    """The data key of the store at ``root`` (the caller holds the store's lock), after
    finishing or undoing a key rotation that was cut short."""
    record = read_record(root)
    if record is None:
        raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
    old = unlock_wraps(record.__dict__, root, passphrase=passphrase,
                       recovery_key=recovery_key)
    if record.pending is None:
        return old
    new = unlock_wraps(record.pending, root, passphrase=passphrase, recovery_key=recovery_key)
    vault = P.vault_path(root)
    if opens_with(vault, derive(new, "vault")):
        log.warning("finishing a key rotation that was interrupted")
        _finish(root, old, new)
        return new
    if opens_with(vault, derive(old, "vault")):
        log.warning("undoing a key rotation that was interrupted before the vault changed")
        _undo(root)
        return old
    raise WrongKey("vault.db opens with neither the store's key nor the one rotating in: "
                   "restore it from a backup of this store")


def _retiring(record: KeyRecord, root: Path, wraps: dict[str, Any]) -> str:
    """The keychain entry that ``wraps`` (a record or its pending key) names, or ""."""
    if wraps.get("method") != "keychain":
        return ""
    return str(wraps.get("keychain_account") or legacy_account(root))


def _finish(root: Path, old: bytes, new: bytes) -> None:
    """Steps 3 and 4: reseal the vectors, make the pending key the store's key."""
    checkpoint(P.vault_path(root), derive(new, "vault"))
    SnapshotFile(P.snapshot_path(root), old).rekey(new)
    _drop_embedded(root)
    with key_lock(root):
        record = read_record(root)
        assert record is not None and record.pending is not None
        nxt = record.pending
        retired = [*record.retired, *filter(None, [_retiring(record, root, record.__dict__)])]
        fields = {k: nxt.get(k, v) for k, v in NO_PASSPHRASE.items()}
        write_record(root, dataclasses.replace(
            record, key_id=nxt["key_id"], keychain_account=nxt.get("keychain_account", ""),
            recovery=nxt.get("recovery"), pending=None, retired=retired, **fields))
    _delete_retired(root)


def _undo(root: Path) -> None:
    """The vault never changed: forget the pending key (and its keychain entry)."""
    with key_lock(root):
        record = read_record(root)
        assert record is not None and record.pending is not None
        retired = [*record.retired, *filter(None, [_retiring(record, root, record.pending)])]
        write_record(root, dataclasses.replace(record, pending=None, retired=retired))
    _delete_retired(root)


def _delete_retired(root: Path) -> None:
    with key_lock(root):
        record = read_record(root)
        if record is None or not record.retired:
            return
        left = [a for a in record.retired if not keychain_delete(a)]
        if left != record.retired:
            write_record(root, dataclasses.replace(record, retired=left))


def _drop_embedded(root: Path) -> None:
    """Remove vectors/ (renamed first, so that a cut-short removal never leaves a half
    store under the name the engine opens), and any left by an earlier rotation."""
    path = P.vectors_path(root)
    if path.is_dir() and not path.is_symlink():
        path.rename(root / f"{RETIRED_VECTORS}{secrets.token_hex(4)}")
    for old in root.glob(RETIRED_VECTORS + "*"):
        shutil.rmtree(old, ignore_errors=True)


def rotate_key(data_dir: str | Path | None = None, *, passphrase: str | None = None,
               recovery_key: str | None = None) -> KeyChangeResult:
    """A new data key for the store (closed: StoreLocked while an engine has it open):
    the vault rekeyed, the vectors resealed, the key wrapped as before. A passphrase
    store needs its passphrase (the new key is wrapped under it)."""
    t0 = time.perf_counter()
    root, _ = prepare_root(data_dir, create=False)
    cfg = load_config(root)
    lock = lock_store(root)
    try:
        old = open_key(root, passphrase=passphrase, recovery_key=recovery_key)
        new = secrets.token_bytes(32)
        with key_lock(root):
            record = read_record(root)
            assert record is not None
            store_id = record.store_id or new_store_id()
            pending: dict[str, Any] = {"method": record.method, "key_id": key_id(new)}
            if record.method == "passphrase":
                given = passphrase if passphrase and not R.looks_like_recovery_key(passphrase) \
                    else headless_passphrase()
                if not given:
                    raise KeyUnavailable("the new data key is wrapped under the passphrase: "
                                         "give the passphrase (not the recovery key)")
                unwrap_passphrase(record.__dict__, given)  # the right one: WrongKey if not
                pending.update(passphrase_wrap(new, given, cfg.keys))
            else:
                pending["keychain_account"] = account_for(store_id, key_id(new))
                keychain_set(pending["keychain_account"], new)
            if record.recovery:
                public = R.RecoveryWrap.from_dict(record.recovery).public_bytes()
                pending["recovery"] = R.wrap_for(public, new).to_dict()
            write_record(root, dataclasses.replace(record, store_id=store_id, pending=pending))
        rekey_vault(P.vault_path(root), derive(old, "vault"), derive(new, "vault"),
                    name_key=derive(old, "name-hash"))
        _finish(root, old, new)
    finally:
        lock.release()
        P.harden(root)
    return KeyChangeResult("rotate", key_id(new), round(time.perf_counter() - t0, 3),
                           old_key_id=key_id(old))


def settle_closed(data_dir: str | Path | None) -> Path:
    """The store's folder, with an interrupted rotation finished first (when no engine
    runs: one that runs finished it when it opened). The layout is not checked here:
    ``ctx repair`` calls this before it sets a damaged vectors/ aside."""
    root = P.data_dir(data_dir)
    record = read_record(root)
    if record is not None and record.pending is not None:
        lock = lock_store(root)
        try:
            open_key(root)
        finally:
            lock.release()
    return root


def change_passphrase(data_dir: str | Path | None, new: str, *, passphrase: str | None = None,
                      recovery_key: str | None = None) -> KeyChangeResult:
    """A new passphrase (unlocked by the old one, or by the recovery key)."""
    root = settle_closed(data_dir)
    key_changes.change_passphrase(root, load_config(root).keys, new, passphrase=passphrase,
                                  recovery_key=recovery_key)
    return _result("passphrase", root)


def use_passphrase(data_dir: str | Path | None, new: str, *, passphrase: str | None = None,
                   recovery_key: str | None = None) -> KeyChangeResult:
    """Keep the key under a passphrase instead of the OS keychain."""
    root = settle_closed(data_dir)
    key_changes.use_passphrase(root, load_config(root).keys, new, passphrase=passphrase,
                               recovery_key=recovery_key)
    return _result("use-passphrase", root)


def use_keychain(data_dir: str | Path | None, *, passphrase: str | None = None,
                 recovery_key: str | None = None) -> KeyChangeResult:
    """Keep the key in the OS keychain (again, after the keychain lost it)."""
    root = settle_closed(data_dir)
    key_changes.use_keychain(root, passphrase=passphrase, recovery_key=recovery_key)
    return _result("use-keychain", root)


def renew_recovery_key(data_dir: str | Path | None, *, passphrase: str | None = None,
                     recovery_key: str | None = None) -> KeyChangeResult:
    """A new recovery key (in the result's ``recovery_key``, shown once; the old one
    stops opening the store)."""
    root = settle_closed(data_dir)
    text = key_changes.new_recovery_key(root, passphrase=passphrase, recovery_key=recovery_key)
    return dataclasses.replace(_result("recovery", root), recovery_key=text)


def _result(what: str, root: Path) -> KeyChangeResult:
    record = read_record(root)
    assert record is not None
    return KeyChangeResult(what, record.key_id, 0.0, method=record.method,
                           has_recovery=record.recovery is not None)
