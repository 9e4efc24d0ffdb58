"""What a data dir holds, read before anything is opened, locked or created.

``check_layout`` only reads: it never creates, chmods or locks anything, so a
data dir that turns out to be a typo, someone else's folder, or a damaged
store is left exactly as it was. Each refusal names the part that is wrong and
what to do about it, with a stable error code (``engine.errors``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from engine import paths as P
from engine.errors import (
    KeyRecordDamaged,
    NotAStore,
    StoreExists,
    StoreNotInitialized,
    VaultDamaged,
    VaultMissing,
    VectorsDamaged,
)

# Files a store (or a user preparing one) may hold; anything else means "not ours".
STORE_NAMES = frozenset({
    "key.json", "key.tmp", "vault.db", "vault.db-wal", "vault.db-shm", "vault.db-journal",
    "vectors", "vectors.snap", "vectors.snap.tmp", "space.reserve", "engine.lock",
    "config.toml", "key.lock", "rotation.lock", "restore.partial",  # key changes, a restore's swap
    "logs", "engine-start.lock", "engine-start.json",  # the background engine (ipc.cli.autostart)
})
# Of those, the ones only a store makes: one left means a store was here (config.toml,
# locks, logs and connection files are made before a store or beside one).
PART_NAMES = frozenset({
    "key.json", "key.tmp", "vault.db", "vault.db-wal", "vault.db-shm", "vault.db-journal",
    "vectors", "vectors.snap", "vectors.snap.tmp", "space.reserve", "restore.partial",
})
SQLITE_MAGIC = b"SQLite format 3\x00"
PAGE = 1024  # SQLCipher pages are 4096 bytes by default; any valid vault is a multiple of 1024


@dataclass(frozen=True)
class Layout:
    root: Path
    exists: bool
    has_key: bool
    has_vault: bool
    has_vectors: bool
    foreign: tuple[str, ...]  # entries a store never holds
    parts: tuple[str, ...] = ()  # entries only a store makes (PART_NAMES and kept vectors)

    @property
    def has_store(self) -> bool:
        """Any part of a store is here: it is opened (or refused), never made anew."""
        return self.has_key or self.has_vault or self.has_vectors or bool(self.parts)

    @property
    def empty(self) -> bool:
        """No store files yet (a config.toml or a stale lock file may be there)."""
        return self.exists and not (self.has_store or self.foreign)


def read_layout(root: Path) -> Layout:
    """What ``root`` holds. NotAStore when it exists but is not a folder."""
    try:
        st = root.stat()
    except FileNotFoundError:
        return Layout(root, False, False, False, False, ())
    except OSError as exc:
        raise NotAStore(f"the data dir cannot be read: {root} ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise NotAStore(f"the data dir is not a folder: {root}; pick another --data-dir")
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise NotAStore(f"the data dir cannot be read: {root} ({exc.strerror})") from None
    return Layout(root, True, P.keyfile_path(root).name in names, "vault.db" in names,
                  "vectors" in names,
                  tuple(n for n in names if not _ours(n)),
                  tuple(n for n in names if _part(n)))


def _part(name: str) -> bool:
    return name in PART_NAMES or name.startswith(("vectors.damaged-", "vectors.old-",
                                                  "vectors.snap.damaged-"))


def _ours(name: str) -> bool:
    """A name a store (or a ctx server's connection file beside it) may hold."""
    return name in STORE_NAMES or name.startswith(("vectors.damaged-", "vectors.old-",
                                                   "vectors.snap.damaged-")) \
        or (name.startswith("ctx-") and name.endswith(".json"))


def _entries(n: int) -> str:
    return "1 other entry" if n == 1 else f"{n} other entries"


def check_can_create(layout: Layout, *, explicit_init: bool) -> None:
    """Refuse to create a store where one (or part of one) is, or in a foreign folder
    unless the user asked for it with ``ctx init``."""
    root = layout.root
    if layout.has_store:
        check_existing(layout)  # a damaged store says what is wrong
        raise StoreExists(f"a store already exists in {root}: `ctx init` makes new ones "
                          "only; use this one as it is (`ctx status`), or pick another "
                          "--data-dir for a new one")
    if layout.foreign and not explicit_init:
        raise NotAStore(
            f"{root} is not a ctx store (it holds {_entries(len(layout.foreign))}); "
            f"pick another --data-dir, or run `{P.init_command(root)}` to create a store there")


def check_existing(layout: Layout) -> None:
    """Refuse an existing store whose parts are missing or not what they should be."""
    root = layout.root
    if not layout.exists:
        raise StoreNotInitialized(
            f"no store at {root}: check the path, or run `{P.init_command(root)}`")
    if not layout.has_key:
        if layout.has_vault or layout.has_vectors:
            raise KeyRecordDamaged(
                f"key.json is missing from {root}: the vault cannot be read without it; "
                "restore key.json from a backup of this store")
        if layout.parts:
            shown = ", ".join(layout.parts[:6]) + (", ..." if len(layout.parts) > 6 else "")
            raise VaultMissing(
                f"key.json and vault.db are missing from {root}, which still holds parts "
                f"of a store ({shown}); ctx makes no new store over them. Restore the "
                "store's key.json and vault.db from a backup of the data dir, or move the "
                f"data dir away, then run `{P.store_command(root, 'restore BACKUP')}` or "
                f"`{P.init_command(root)}` to put a store in its place")
        if layout.foreign:
            raise NotAStore(
                f"{root} is not a ctx store (no key.json, {_entries(len(layout.foreign))}); "
                f"pick another --data-dir, or run `{P.init_command(root)}` to create one there")
        raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
    key = P.keyfile_path(root)
    if not key.is_file():
        raise KeyRecordDamaged(f"key.json in {root} is not a file; restore it from a backup")
    vault = P.vault_path(root)
    if not layout.has_vault:
        raise VaultMissing(
            f"vault.db is missing from {root}"
            + (" (vectors/ is still there)" if layout.has_vectors else "")
            + ": restore vault.db from a backup of this store, or move the data dir "
            f"away and run `{P.init_command(root)}` for a new one")
    check_vault_file(vault)
    vectors = P.vectors_path(root)
    if layout.has_vectors and not vectors.is_dir():
        raise VectorsDamaged(
            f"vectors/ in {root} is not a folder: move it away, then run `ctx repair` "
            "to rebuild the vectors from the vault")


def check_vault_file(vault: Path) -> None:
    """A vault must be a regular, encrypted SQLCipher file of whole pages."""
    try:
        st = vault.stat()
    except OSError as exc:
        raise VaultDamaged(f"vault.db cannot be read ({exc.strerror}); restore it from a "
                           "backup") from None
    if not stat.S_ISREG(st.st_mode):
        raise VaultDamaged("vault.db is not a file: restore it from a backup")
    if st.st_size == 0:
        raise VaultDamaged("vault.db is empty (0 bytes): restore it from a backup")
    try:
        with open(vault, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise VaultDamaged(f"vault.db cannot be read ({exc.strerror}); restore it from a "
                           "backup") from None
    if head == SQLITE_MAGIC:
        raise VaultDamaged("vault.db is an unencrypted SQLite file, not this store's vault: "
                           "restore this store's vault.db from a backup")
    if st.st_size % PAGE:
        raise VaultDamaged(f"vault.db is truncated ({st.st_size} bytes is not a whole number "
                           "of pages): restore it from a backup")
