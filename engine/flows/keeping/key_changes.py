"""Key changes that touch the data: a new data key (rotation), and finishing one that a
crash cut short.

A rotation runs in four steps, each atomic on its own:

1. key.json gets ``pending``: the new key wrapped as the old one is (under the
   same passphrase, in a new keychain entry, for the same recovery key), and
   ``sealed`` under the old data key;
2. the vault goes under the new key: with the store closed (``rotate_key``),
   SQLCipher's ``PRAGMA rekey`` in one transaction; in the running engine
   (``prepare_rotation`` where the passphrase is, then the engine's job,
   ``rotate_work``), the vault written whole under the new key beside vault.db
   while reads go on, then renamed over it (engine/store/vault/rekey.py);
3. the sealed vectors are sealed again under the new key (an embedded Chroma
   store, whose rotation and ids come from the key, is removed: it is rebuilt
   from the vault at the next open; a running engine refuses to rotate one);
4. key.json names the new key alone; the old keychain entry is deleted.

Killed anywhere, the next open (``open_key``) reads ``pending``, asks the vault
which key opens it, and finishes the rotation (after step 2) or undoes it
(before, removing a half-written vault.db.rotating): the store always opens with
the old key or the new one, and nothing is lost. Backups taken before keep the
old key, wrapped as it was then.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine import paths as P
from engine.api import KeyChangeResult
from engine.config import Config, load_config
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
from engine.errors import (
    ConfigError,
    KeyUnavailable,
    StoreLocked,
    StoreNotInitialized,
    WrongKey,
)
from engine.flows.job import byte_progress
from engine.flows.opening import lock_store, prepare_root
from engine.flows.runtime import Runtime
from engine.store.vault.lock import DataDirLock
from engine.store.vault.rekey import (
    checkpoint,
    export_rekeyed,
    keep_name_key,
    opens_with,
    rekey_vault,
    rotating_path,
    swap_in,
    writes_held,
)
from engine.store.vectors.snapshot import SnapshotFile

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
    new = _unseal(old, record.pending) if record.pending.get("sealed") else \
        unlock_wraps(record.pending, root, passphrase=passphrase, recovery_key=recovery_key)
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
    rotating_path(P.vault_path(root)).unlink(missing_ok=True)
    checkpoint(P.vault_path(root), derive(new, "vault"))
    SnapshotFile(P.snapshot_path(root), old).rekey(new)
    _drop_embedded(root)
    _settle_record(root)


def _settle_record(root: Path) -> None:
    """Step 4: the pending key becomes the store's key; the old keychain entry goes."""
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
    """The vault never changed: forget the pending key (and its keychain entry), and
    remove the vault's copy under it, if one was being written."""
    rotating_path(P.vault_path(root)).unlink(missing_ok=True)
    with key_lock(root):
        record = read_record(root)
        if record is None or record.pending is None:
            return
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


def _write_pending(root: Path, cfg: Config, old: bytes, new: bytes,
                   passphrase: str | None) -> None:
    """Step 1: key.json gets ``pending``, the new key wrapped as the old one is, and
    sealed under the old key (``sealed``: how an engine that holds the old key, and no
    passphrase, takes the new one: ``rotate_work``)."""
    with key_lock(root):
        record = read_record(root)
        assert record is not None
        store_id = record.store_id or new_store_id()
        pending: dict[str, Any] = {"method": record.method, "key_id": key_id(new),
                                   "sealed": _seal(old, new)}
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


def _seal(old: bytes, new: bytes) -> str:
    nonce = secrets.token_bytes(12)
    box = AESGCM(derive(old, "pending-key")).encrypt(nonce, new, b"ctx-pending-key-v1")
    return base64.b64encode(nonce + box).decode("ascii")


def _unseal(old: bytes, pending: dict[str, Any]) -> bytes:
    """The pending key, from its copy sealed under the store's key ``old``."""
    try:
        raw = base64.b64decode(str(pending.get("sealed") or ""))
        new = AESGCM(derive(old, "pending-key")).decrypt(raw[:12], raw[12:],
                                                         b"ctx-pending-key-v1")
    except (InvalidTag, ValueError):
        raise WrongKey("the key rotation in key.json was not prepared for this store's key: "
                       "run `ctx key rotate` again") from None
    if key_id(new) != pending.get("key_id"):
        raise WrongKey("the key rotation in key.json names another key: run `ctx key "
                       "rotate` again")
    return new


def prepare_rotation(data_dir: str | Path | None = None, *, passphrase: str | None = None,
                     recovery_key: str | None = None) -> str:
    """Step 1 of a key rotation by the running engine (``ContextEngine.rotate_key``): a
    new data key, wrapped as the store's key is (a passphrase store needs its
    passphrase), written to key.json as pending. Runs where the passphrase is (the
    engine never receives one); the store may be open. Returns the new key's id."""
    root = P.data_dir(data_dir)
    cfg = load_config(root)
    record = read_record(root)
    if record is None:
        raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
    with _rotation_lock(root, wait=False):  # StoreLocked while a rotation job runs
        record = read_record(root)  # read again under the lock: a rotation that just
        if record is None:  # ended changed the store's key
            raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
        old = unlock_wraps(record.__dict__, root, passphrase=passphrase,
                           recovery_key=recovery_key)
        if record.pending is not None:
            _undo(root)  # a rotation prepared before and never run: replaced
        new = secrets.token_bytes(32)
        _write_pending(root, cfg, old, new, passphrase)
    return key_id(new)


ROTATION_LOCK = "rotation.lock"  # held by the running engine's rotation job, start to end
ROTATION_LOCK_WAIT_S = 60.0  # a job waits this long for a prepare in flight (a key wrap)


@contextmanager
def _rotation_lock(root: Path, *, wait: bool) -> Iterator[None]:
    """The store's rotation lock: a rotation job holds it from reading the pending key to
    settling it, a prepare while it writes one. A prepare that finds it held is refused
    (replacing the pending key under a running job would leave the vault under a key
    that key.json no longer names); a job waits for a prepare in flight."""
    lock = DataDirLock(root / ROTATION_LOCK)
    deadline = time.monotonic() + (ROTATION_LOCK_WAIT_S if wait else 0.0)
    while True:
        try:
            lock.acquire()
            break
        except StoreLocked:
            if time.monotonic() >= deadline:
                raise StoreLocked("a key rotation is under way for this store: wait for its "
                                  "job to end (`ctx jobs`), then rotate again") from None
            time.sleep(0.1)
    try:
        yield
    finally:
        lock.release()


def drop_prepared(root: Path) -> None:
    """Forget a rotation prepared and not run (its job was cancelled while queued, or the
    engine refused it): the pending key, its keychain entry, any half-written vault."""
    _undo(root)


def pending_key_id(data_dir: str | Path | None) -> str:
    """The id of the key ``prepare_rotation`` wrote as pending (ConfigError: none)."""
    record = read_record(P.data_dir(data_dir))
    if record is None or record.pending is None or not record.pending.get("sealed"):
        raise ConfigError("no key rotation is prepared for this store: `ctx key rotate` "
                          "prepares one and asks the engine to do it")
    return str(record.pending["key_id"])


def rotate_work(rt: Runtime, old: bytes, *, expected: str, rekeyed: Callable[[bytes], None],
                before_swap: Callable[[], None]) -> Callable[[Any, Callable[[], None]], None]:
    """The single writer's job (kind "rotate") that moves the running store to the
    pending key (``prepare_rotation``) while reads go on:

    1. every write of the engine is held (other jobs queue behind this one; a write of
       another thread waits; reads' access counts are kept and written after);
    2. the vault is exported under the new key to vault.db.rotating (reads go on on the
       old file; the job's ``bytes`` of ``bytes_total``);
    3. with the reading calls under way ended and new ones waiting a moment, the
       vault's connections are closed, the new file renamed over vault.db and opened;
    4. the vector snapshot is sealed again, and key.json names the new key alone.

    Killed before the rename, the next open finds vault.db under the old key and undoes
    the rotation; after it, under the new key, and finishes it (``open_key``). A failure
    or a cancel before the rename undoes it at once. ``rekeyed(new)`` tells the engine
    its key once vault.db is under it. ``expected``: the id of the pending key the job
    was asked for; another prepare that replaced it while the job was queued fails the
    job before anything is written."""
    root, vault = rt.root, rt.vault

    def work(job: Any, progress: Callable[[], None]) -> None:
        with _rotation_lock(root, wait=True):
            rotate(job, progress)

    def rotate(job: Any, progress: Callable[[], None]) -> None:
        record = read_record(root)
        if record is None or record.pending is None:
            raise ConfigError("no key rotation is prepared: run `ctx key rotate`")
        if record.pending.get("key_id") != expected:
            raise ConfigError("the key prepared for this rotation was replaced by another "
                              "`ctx key rotate` before it ran: nothing changed, rotate again")
        new = _unseal(old, record.pending)
        job.current = "vault"
        progress()
        step = byte_progress(job, progress)
        try:
            with writes_held(vault):
                keep_name_key(vault, derive(old, "name-hash"))
                target = export_rekeyed(vault, derive(new, "vault"), step)
                job.current = "swap"
                progress()
                before_swap()
                swap_in(vault, target, derive(new, "vault"))
        except BaseException:
            rotating_path(vault.path).unlink(missing_ok=True)
            _undo(root)
            raise
        rekeyed(new)
        job.current = "vectors"
        progress()
        rt.vectors.rekey(new)
        _settle_record(root)
        job.current = ""
        job.files_done = job.files_total = 1
        P.harden(root)
    return work


def rotate_key(data_dir: str | Path | None = None, *, passphrase: str | None = None,
               recovery_key: str | None = None) -> KeyChangeResult:
    """A new data key for a closed store (StoreLocked while an engine has it open: the
    engine's ``rotate_key`` does it while it runs): the vault rekeyed, the vectors
    resealed, the key wrapped as before. A passphrase store needs its passphrase (the
    new key is wrapped under it)."""
    t0 = time.perf_counter()
    root, _ = prepare_root(data_dir, create=False)
    cfg = load_config(root)
    lock = lock_store(root)
    try:
        old = open_key(root, passphrase=passphrase, recovery_key=recovery_key)
        new = secrets.token_bytes(32)
        _write_pending(root, cfg, old, new, passphrase)
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
    return _closed_change(data_dir, "passphrase", lambda root: key_changes.change_passphrase(
        root, load_config(root).keys, new, passphrase=passphrase, recovery_key=recovery_key))


def use_passphrase(data_dir: str | Path | None, new: str, *, passphrase: str | None = None,
                   recovery_key: str | None = None) -> KeyChangeResult:
    """Keep the key under a passphrase instead of the OS keychain."""
    return _closed_change(data_dir, "use-passphrase", lambda root: key_changes.use_passphrase(
        root, load_config(root).keys, new, passphrase=passphrase, recovery_key=recovery_key))


def use_keychain(data_dir: str | Path | None, *, passphrase: str | None = None,
                 recovery_key: str | None = None) -> KeyChangeResult:
    """Keep the key in the OS keychain (again, after the keychain lost it)."""
    return _closed_change(data_dir, "use-keychain", lambda root: key_changes.use_keychain(
        root, passphrase=passphrase, recovery_key=recovery_key))


def renew_recovery_key(data_dir: str | Path | None, *, passphrase: str | None = None,
                     recovery_key: str | None = None) -> KeyChangeResult:
    """A new recovery key (in the result's ``recovery_key``, shown once; the old one
    stops opening the store)."""
    root = settle_closed(data_dir)
    text = key_changes.renew_recovery_key(root, passphrase=passphrase, recovery_key=recovery_key)
    return dataclasses.replace(_result("recovery", root), recovery_key=text)


def _closed_change(data_dir: str | Path | None, what: str,
                   change: Callable[[Path], object]) -> KeyChangeResult:
    """``change`` made to the key record of a closed store (a rotation left half done
    settled first), and its result."""
    root = settle_closed(data_dir)
    change(root)
    return _result(what, root)


def _result(what: str, root: Path) -> KeyChangeResult:
    record = read_record(root)
    assert record is not None
    return KeyChangeResult(what, record.key_id, 0.0, method=record.method,
                           has_recovery=record.recovery is not None)
