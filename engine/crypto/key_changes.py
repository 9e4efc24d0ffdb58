"""Changes of how the data key is kept, none of which touches the data.

A new passphrase, a switch between the keychain and a passphrase, and a new
recovery key each rewrap the same data key and replace key.json in one atomic
rename: killed at any moment, the store opens with the old way or the new one.
A keychain entry is written before the record that names it, and one no longer
named is deleted after (or, if that is cut short, at the next change: the
record lists it under ``retired``). An engine may run meanwhile: it holds the
key itself. ``engine.flows.keeping.key_changes`` finishes an interrupted key rotation
before any of these runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine import paths as P
from engine.crypto import keys as K
from engine.crypto import recovery as R
from engine.crypto.config import KeyConfig
from engine.errors import ConfigError, KeyUnavailable, StoreNotInitialized


def _record(root: Path) -> K.KeyRecord:
    record = K.read_record(root)
    if record is None:
        raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
    if record.pending is not None:
        raise ConfigError("a key rotation of this store was interrupted: open the store once "
                          "(any ctx command) to finish it, then try again")
    return record


def _unlock(root: Path, record: K.KeyRecord, passphrase: str | None,
            recovery_key: str | None) -> bytes:
    return K.unlock_wraps(record.__dict__, root, passphrase=passphrase, recovery_key=recovery_key)


def _account_of(record: K.KeyRecord, root: Path) -> str:
    return record.keychain_account or K.legacy_account(root)


def _write(root: Path, record: K.KeyRecord) -> None:
    """Write ``record``, then delete the keychain entries it retires (those that cannot
    be deleted now stay listed, for the next change)."""
    K.write_record(root, record)
    left = [a for a in record.retired if not K.keychain_delete(a)]
    if left != record.retired:
        K.write_record(root, dataclasses.replace(record, retired=left))


def ensure_store_id(root: Path) -> str:
    """The store's lasting id, given to a store made before ids existed."""
    with K.key_lock(root):
        record = _record(root)
        if record.store_id:
            return record.store_id
        record = dataclasses.replace(record, store_id=K.new_store_id())
        K.write_record(root, record)
        return record.store_id


def change_passphrase(root: Path, cfg: KeyConfig, new: str, *, passphrase: str | None = None,
                      recovery_key: str | None = None) -> None:
    """Wrap the data key under ``new`` (unlocked by the old passphrase or the recovery key)."""
    with K.key_lock(root):
        record = _record(root)
        if record.method != "passphrase":
            raise ConfigError("this store's key is kept in the OS keychain: "
                              "`ctx key use-passphrase` protects it with a passphrase instead")
        key = _unlock(root, record, passphrase, recovery_key)
        _write(root, dataclasses.replace(record, **K.passphrase_wrap(key, new, cfg)))


def use_passphrase(root: Path, cfg: KeyConfig, new: str, *, passphrase: str | None = None,
                   recovery_key: str | None = None) -> None:
    """Keep the data key under the passphrase ``new`` instead of the keychain (whose entry
    is then deleted)."""
    with K.key_lock(root):
        record = _record(root)
        key = _unlock(root, record, passphrase, recovery_key)
        retired = list(record.retired)
        if record.method == "keychain":
            retired.append(_account_of(record, root))
        _write(root, dataclasses.replace(record, method="passphrase", keychain_account="",
                                         retired=retired, **K.passphrase_wrap(key, new, cfg)))


def use_keychain(root: Path, *, passphrase: str | None = None,
                 recovery_key: str | None = None) -> None:
    """Keep the data key in the OS keychain (instead of a passphrase, or again after the
    keychain lost it: unlock with the recovery key)."""
    if not K.keychain_available():
        raise KeyUnavailable("no OS keychain is usable here")
    with K.key_lock(root):
        record = _record(root)
        key = _unlock(root, record, passphrase, recovery_key)
        store_id = record.store_id or K.new_store_id()
        account = K.account_for(store_id, K.key_id(key))
        K.keychain_set(account, key)
        retired = list(record.retired)
        old = _account_of(record, root) if record.method == "keychain" else ""
        if old and old != account:
            retired.append(old)
        _write(root, dataclasses.replace(record, method="keychain", store_id=store_id,
                                         keychain_account=account, retired=retired,
                                         **K.NO_PASSPHRASE))


def renew_recovery_key(root: Path, *, passphrase: str | None = None,
                       recovery_key: str | None = None) -> str:
    """Make a new recovery key for the store and return it (shown once: no copy is kept).
    The previous one stops opening the store (backups taken before keep theirs)."""
    with K.key_lock(root):
        record = _record(root)
        key = _unlock(root, record, passphrase, recovery_key)
        text = R.new_recovery_key()
        wrap = R.wrap_for(R.public_key(R.parse_key(text)), key)
        _write(root, dataclasses.replace(record, recovery=wrap.to_dict(),
                                         store_id=record.store_id or K.new_store_id()))
        return text
