"""Taking a backup of the open store, and checking one without restoring it.

A backup is taken while the engine runs: the vault through SQLite's online
backup API under one read transaction (``store.vault.copy``), the in-memory
vector index captured at the moment that transaction starts (so that restoring
loads it as it is instead of rebuilding it from the vault: see the module doc of
``bench/backup_bench.py`` for the figures), and config.toml. All of it goes
into one file sealed under the data key (``engine.backup.format``).

The file is written as ``NAME.partial`` beside its final name and renamed only
once whole and on disk: a backup cut short never has the name of a whole one,
and has no last segment, so checking it says it is truncated. The vault's copy
waits as ``.NAME.vault.partial`` in the same folder (a SQLCipher file: no text
in the clear); both go when the backup ends, fails or is cancelled, and the next
backup of the store removes any that a killed one left, wherever it wrote them
(``backup_partials``: recorded in the vault before they are written).
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from engine import paths as P
from engine.api import BackupResult
from engine.backup import format as F
from engine.crypto import key_changes
from engine.crypto.keys import KeyRecord, key_id, legacy_account, read_record, unlock_wraps
from engine.errors import (
    BackupDamaged,
    BackupMismatch,
    CtxError,
    InvalidInput,
    KeyUnavailable,
    WrongKey,
)
from engine.flows.keeping import backup_partials as partials
from engine.flows.runtime import Runtime
from engine.store.vault.copy import VaultCopy
from engine.store.vault.core import Vault
from engine.store.vectors.memory import MemoryVectors
from engine.store.vectors.snapshot import Snapshot, fingerprint

log = logging.getLogger("ctx.backup")

LAST_BACKUP = "last_backup"  # vault meta: when the last backup finished
UNMATCHED = (1 << 63) - 1  # a vectors entry's version when it must be checked against the vault
_VECTORS_HEAD = struct.Struct(">QQH")  # version, count, dim
Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


def default_name(now: float | None = None) -> str:
    return time.strftime("ctx-backup-%Y%m%d-%H%M%S", time.localtime(now)) + F.SUFFIX


def target(path: str | os.PathLike[str], root: Path) -> Path:
    """Where a backup to ``path`` goes: a folder gets a dated name in it. Refused: a place
    inside the data dir, and an existing file that is not a ctx backup."""
    dest = Path(path).expanduser().resolve()
    if dest.is_dir():
        dest = dest / default_name()
    if dest == root or root in dest.parents:
        raise InvalidInput("a backup must not be written inside the data dir it backs up",
                           field="path")
    if not dest.parent.is_dir():
        raise InvalidInput(f"the folder {dest.parent} does not exist", field="path")
    if dest.exists():
        try:
            with open(dest, "rb") as fh:
                F.read_header(fh)
        except (OSError, BackupDamaged):
            raise InvalidInput(f"{dest} exists and is not a ctx backup: pick another name",
                               field="path") from None
    return dest


def header_wraps(record: KeyRecord, root: Path) -> dict[str, Any]:
    """The data key as key.json wraps it, for a backup's header (a keychain entry by name)."""
    wraps: dict[str, Any] = {k: getattr(record, k) for k in (
        "method", "key_id", "salt", "nonce", "wrapped", "scrypt_n", "scrypt_r", "scrypt_p",
        "recovery")}
    if record.method == "keychain":
        wraps["keychain_account"] = record.keychain_account or legacy_account(root)
    return wraps


def _capture(vectors: Any) -> Callable[[], tuple[np.ndarray, np.ndarray] | None]:
    def capture() -> tuple[np.ndarray, np.ndarray] | None:
        return vectors.index_copy() if isinstance(vectors, MemoryVectors) else None
    return capture


def encode_vectors(snap: Snapshot) -> list[bytes]:
    n, dim = snap.vectors.shape if len(snap) else (0, 0)
    return [_VECTORS_HEAD.pack(snap.version, n, dim),
            np.ascontiguousarray(snap.ids, dtype="<i8").tobytes(),
            np.ascontiguousarray(snap.hashes, dtype="<u8").tobytes(),
            np.ascontiguousarray(snap.vectors, dtype="<f4").tobytes()]


def decode_vectors(data: bytes) -> Snapshot:
    version, n, dim = _VECTORS_HEAD.unpack_from(data)
    at = _VECTORS_HEAD.size
    if len(data) != at + n * (16 + 4 * dim):
        raise BackupDamaged("the backup is damaged: its vectors entry has the wrong size")
    ids = np.frombuffer(data, "<i8", n, at).astype(np.int64, copy=False)
    hashes = np.frombuffer(data, "<u8", n, at + 8 * n).astype(np.uint64, copy=False)
    vecs = np.frombuffer(data, "<f4", n * dim, at + 16 * n).reshape(n, dim)
    return Snapshot(int(version), ids, hashes, vecs)


def _snapshot(copy: VaultCopy, held: tuple[np.ndarray, np.ndarray] | None) -> Snapshot | None:
    """The captured index as a snapshot of the copied vault's ready chunks; its version is
    the copy's only when it holds every one of them (else the open checks it)."""
    if held is None:
        return None
    held_ids, held_vecs = held
    ids, hashes = copy.fingerprints()
    want = np.asarray(ids, dtype=np.int64)
    keep = np.isin(want, held_ids)
    rows = np.searchsorted(held_ids, want[keep])
    version = copy.chunk_version if bool(keep.all()) else UNMATCHED
    return Snapshot(version, want[keep], fingerprint([h for h, k in zip(hashes, keep,
                                                                       strict=True) if k]),
                    held_vecs[rows] if len(rows) else np.zeros((0, held_vecs.shape[1]),
                                                               np.float32))


@dataclass
class _Meter:
    """Bytes done of bytes in all, told to ``progress`` (and checked for a stop)."""

    total: int
    progress: Progress | None
    done: int = 0

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, max(self.total, self.done))


def take_backup(rt: Runtime, data_key: bytes, path: str | os.PathLike[str], *,
                progress: Progress | None = None, include_vectors: bool = True
                ) -> BackupResult:
    """Write a backup of the open store to ``path`` (see the module doc); ``progress``
    may raise to stop it (nothing is left behind then)."""
    t0 = time.perf_counter()
    root = rt.root
    store_id = key_changes.ensure_store_id(root)
    record = read_record(root)
    assert record is not None and record.key_id == key_id(data_key)
    dest = target(path, root)
    partial = dest.with_name(dest.name + ".partial")
    vault_tmp = dest.with_name(f".{dest.name}.vault.partial")
    partials.clean_stale(rt.vault)  # what a killed backup of this store left anywhere
    with partials.writing(rt.vault, partial, vault_tmp):
        try:
            for stale in (partial, vault_tmp):
                stale.unlink(missing_ok=True)
            created, counts = _write(rt, data_key, record, store_id, dest, partial,
                                     vault_tmp, progress, include_vectors)
        finally:
            partial.unlink(missing_ok=True)
            vault_tmp.unlink(missing_ok=True)
    try:
        rt.vault.set_meta(LAST_BACKUP, repr(created))
    except CtxError as exc:  # the backup is whole: only its date is not kept
        log.warning("backup written; its date not recorded (%s)", exc.name)
    size = dest.stat().st_size
    log.info("backup written: %d bytes, %d chunks", size, counts["chunks"])
    return BackupResult(str(dest), size, created, store_id, record.key_id,
                        sources=counts["sources"], chunks=counts["chunks"],
                        vectors=counts["vectors"], seconds=round(time.perf_counter() - t0, 3))


def _write(rt: Runtime, data_key: bytes, record: KeyRecord, store_id: str, dest: Path,
           partial: Path, vault_tmp: Path, progress: Progress | None, include_vectors: bool
           ) -> tuple[float, dict[str, Any]]:
    """The backup into ``partial`` (the vault's copy in ``vault_tmp`` first), renamed to
    ``dest`` once whole and on disk; its time and counts."""
    root = rt.root
    copy = VaultCopy(rt.vault, _capture(rt.vectors) if include_vectors else None)
    try:
        snap = _snapshot(copy, copy.held)
        counts = copy.counts()
        vault_bytes = copy.pages * copy.page_size
        vec_parts = encode_vectors(snap) if snap is not None else []
        config = P.config_path(root)
        config_bytes = config.read_bytes() if config.is_file() else b""
        meter = _Meter(2 * vault_bytes + sum(map(len, vec_parts)) + len(config_bytes), progress)
        last = [0]

        def step(done: int, total: int) -> None:
            meter.add((done - last[0]) * copy.page_size)
            last[0] = done
        _new_private(vault_tmp).close()
        copy.copy_to(vault_tmp, step)
    finally:
        copy.close()
    created = time.time()
    entries = [("vault.db", vault_tmp.stat().st_size)]
    if vec_parts:
        entries.append(("vectors", sum(map(len, vec_parts))))
    entries.append(("config.toml", len(config_bytes)))
    counts["vectors"] = len(snap) if snap is not None else 0
    header = F.Header(store_id, record.key_id, created, F.new_salt(), header_wraps(record, root))
    with _new_private(partial) as fh:
        writer = F.BackupWriter(fh, header, data_key)
        F.write_manifest(writer, F.Manifest(store_id, record.key_id, entries, counts))
        with open(vault_tmp, "rb") as src:
            while block := src.read(F.SEGMENT):
                writer.write(block)
                meter.add(len(block))
        for part in vec_parts:
            writer.write(part)
            meter.add(len(part))
        writer.write(config_bytes)
        writer.close()
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, dest)
    P.fsync_path(dest.parent)
    return created, counts


def _new_private(path: Path) -> IO[bytes]:
    """A new file, readable by its owner alone, open for writing."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def last_backup(vault: Vault) -> float | None:
    value = vault.get_meta(LAST_BACKUP)
    try:
        return float(value) if value else None
    except ValueError:
        return None


def backup_key(header: F.Header, *, data_key: bytes | None = None,
               store_id: str | None = None, passphrase: str | None = None,
               recovery_key: str | None = None) -> bytes:
    """The key a backup is sealed under: ``data_key`` (an open store's) when it is that
    key, else unwrapped from the header with the passphrase or recovery key given (or in
    the environment). A backup of another store than ``store_id``, with nothing given to
    unwrap it, is BackupMismatch; one of this store under an older key says so."""
    if data_key is not None and key_id(data_key) == header.key_id:
        return data_key
    given = passphrase or recovery_key or os.environ.get("CTX_RECOVERY_KEY")
    if data_key is not None and not given:
        if store_id and header.store_id != store_id:
            raise BackupMismatch("this backup is of another store: give that store's "
                                 "passphrase or recovery key to check it")
        raise KeyUnavailable("this backup was taken under an earlier data key of this store "
                             "(before `ctx key rotate`): give the passphrase or recovery key "
                             "it was taken with")
    try:
        key = unlock_wraps(header.wraps, None, passphrase=passphrase, recovery_key=recovery_key)
    except (WrongKey, KeyUnavailable) as exc:  # said of the backup, not of a store
        raise type(exc)(exc.message.replace("this store", "this backup")) from None
    if key_id(key) != header.key_id:
        raise BackupDamaged("the backup is damaged: its header names another key")
    return key


def open_backup_file(path: str | os.PathLike[str]) -> IO[bytes]:
    """The backup at ``path``, open to read. One whose name ends in ``.partial`` is a backup
    that was never finished (killed before its rename), whatever its bytes say."""
    file = Path(path).expanduser()
    if file.name.endswith(".partial"):
        raise BackupDamaged(f"{file.name} is a backup that was never finished (its name ends "
                            "in .partial): take a new one")
    try:
        return open(file, "rb")
    except OSError as exc:
        raise InvalidInput(f"cannot read {file} ({exc.strerror})", field="path") from None


def verify_backup(path: str | os.PathLike[str], *, data_key: bytes | None = None,
                  store_id: str | None = None, passphrase: str | None = None,
                  recovery_key: str | None = None, progress: Progress | None = None
                  ) -> BackupResult:
    """Read a whole backup and check every part of it, writing nothing (see
    ``backup_key`` for which key opens it). BackupDamaged names what is wrong."""
    t0 = time.perf_counter()
    file = Path(path).expanduser()
    with open_backup_file(file) as fh:
        size = os.fstat(fh.fileno()).st_size
        header, aad = F.read_header(fh)
        key = backup_key(header, data_key=data_key, store_id=store_id, passphrase=passphrase,
                         recovery_key=recovery_key)
        reader = F.BackupReader(fh, header, aad, key)
        manifest = F.read_manifest(reader, header)
        for name, n in manifest.entries:
            first = True
            for piece in reader.chunks(n):
                if first and name == "vault.db":
                    _check_vault_head(piece, n)
                first = False
                if progress is not None:
                    progress(reader.read_bytes, size)
        reader.finish()
    counts = manifest.counts
    return BackupResult(str(file.resolve()), size, header.created, header.store_id,
                        header.key_id, sources=int(counts.get("sources", 0)),
                        chunks=int(counts.get("chunks", 0)),
                        vectors=int(counts.get("vectors", 0)),
                        seconds=round(time.perf_counter() - t0, 3), verified=True)


def _check_vault_head(first: bytes, size: int) -> None:
    """A vault entry is whole pages of SQLCipher (never a plain SQLite file)."""
    if size == 0 or size % 1024 or first.startswith(b"SQLite format 3\x00"):
        raise BackupDamaged("the backup is damaged: its vault is not an encrypted vault")
