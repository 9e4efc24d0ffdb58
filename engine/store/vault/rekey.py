"""A new key for the vault: SQLCipher's rekey, on a closed store.

``PRAGMA rekey`` rewrites every page under the new key in one transaction (in WAL
mode too): killed at any moment, the vault opens with the old key or the new
one, whole (checked by tests/engine/flows/keeping/test_kill.py). Before the key
changes, the key of the names' keyed hashes is kept in the vault itself
(``name_key``), so that the hashes stored under it (a deleted transcript's
path, which a later sync must still skip) keep meaning the same names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlcipher3 import dbapi2 as sqlite

from engine.errors import CtxError, WrongKey
from engine.paths import fsync_path
from engine.store.vault.core import Vault, store_error
from engine.store.vault.integrity import damage_code, damaged, quiet

NAME_KEY = "name_key"


def _connect(path: Path, hexkey: str) -> sqlite.Connection:
    conn = sqlite.connect(str(path), isolation_level=None, timeout=30.0)
    quiet(conn)
    conn.execute(f"PRAGMA key = \"x'{hexkey}'\"")
    return conn


def rekey_vault(path: Path, old: bytes, new: bytes, *, name_key: bytes) -> None:
    """Re-encrypt ``path`` from the raw key ``old`` to ``new`` (both 32 bytes), keeping
    ``name_key`` in its meta table first (unless one is kept already)."""
    conn = _connect(path, old.hex())
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                     (NAME_KEY, name_key.hex()))
        conn.execute(f"PRAGMA rekey = \"x'{new.hex()}'\"")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite.DatabaseError as exc:
        code = damage_code(exc)
        raise (damaged(code, running=False) if code is not None else store_error(exc)) \
            from None
    finally:
        conn.close()


def opens_with(path: Path, key: bytes) -> bool:
    """Whether the vault reads with ``key``. A read-only look first (nothing changes); where
    that cannot run (a WAL index left stale by a kill: SQLITE_PROTOCOL), a read-write
    connection, which recovers the WAL as any open after a crash does (its committed
    frames only: a wrong key reads nothing and changes nothing else)."""
    from engine.store.vault.integrity import probe

    try:
        probe(path, key.hex(), pages=False)
        return True
    except WrongKey:
        return False
    except CtxError:
        pass
    conn = _connect(path, key.hex())
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return True
    except sqlite.DatabaseError:
        return False
    finally:
        conn.close()


def checkpoint(path: Path, key: bytes) -> None:
    """Fold the WAL into vault.db (after a rekey cut short, its frames are under the new
    key and vault.db's pages under the old one: the page check reads vault.db alone)."""
    conn = _connect(path, key.hex())
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite.DatabaseError as exc:
        raise store_error(exc) from None
    finally:
        conn.close()


# --- a rotation while the engine runs (engine/flows/keeping/key_changes.py: rotate_work) -----------

ROTATING = ".rotating"  # vault.db under the new key, being written beside it
# SQLite VM steps between two looks at the export's progress (a look is a stat of the
# file being written: a few microseconds; 20k steps are about a millisecond). Hand-set.
EXPORT_STEPS = 20_000
# How long the swap waits for the reading calls under way to end (a search takes
# milliseconds; one that waits for a write the rotation holds back never ends). Hand-set.
SWAP_WAIT_S = 10.0


def rotating_path(path: Path) -> Path:
    return path.with_name(path.name + ROTATING)


@contextmanager
def writes_held(vault: Vault) -> Iterator[None]:
    """Every write of the engine waits until the block ends (the caller's own thread
    may write); the access counts of reads meanwhile are kept, and written after."""
    with vault._write_lock:
        vault.held_access = []
        try:
            yield
        finally:
            held, vault.held_access = vault.held_access, None
    for ids, at in held:
        vault.record_access(ids, at)


def keep_name_key(vault: Vault, name_key: bytes) -> None:
    """Keep the names' hash key in the vault (unless one is kept): see the module docstring."""
    with vault.write(chunks=False) as c:
        c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                  (NAME_KEY, name_key.hex()))


def export_rekeyed(vault: Vault, new: bytes,
                   step: Callable[[int, int], None] | None = None) -> Path:
    """Write the whole vault, under the raw key ``new``, to a new file beside it
    (``rotating_path``) and return its path. SQLCipher's ``sqlcipher_export`` reads the
    vault on a connection of its own: the engine's other connections go on reading. The
    caller holds the engine's writes (nothing may change while it copies). ``step(bytes
    written, bytes in all)`` now and then; what it raises stops the export (the partial
    file is removed)."""
    target = rotating_path(vault.path)
    target.unlink(missing_ok=True)
    os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600))
    conn = _connect(vault.path, vault._hexkey)
    stopped: list[BaseException] = []
    try:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        total = pages * int(conn.execute("PRAGMA page_size").fetchone()[0])
        auto = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
        conn.execute("ATTACH DATABASE ? AS rotating KEY ?", (str(target), f"x'{new.hex()}'"))
        conn.execute(f"PRAGMA rotating.auto_vacuum = {auto}")  # before its first table

        def look() -> int:
            if step is not None:
                try:
                    step(min(total, target.stat().st_size), total)
                except BaseException as exc:  # noqa: BLE001 - raised again below
                    stopped.append(exc)
                    return 1  # interrupts the export
            return 0
        conn.set_progress_handler(look, EXPORT_STEPS)
        conn.execute("SELECT sqlcipher_export('rotating')").fetchall()
        conn.set_progress_handler(None, 0)
        conn.execute("DETACH DATABASE rotating")
    except sqlite.DatabaseError as exc:
        conn.close()
        target.unlink(missing_ok=True)
        if stopped:
            raise stopped[0] from None
        raise store_error(exc) from None
    except BaseException:
        conn.close()
        target.unlink(missing_ok=True)
        raise
    conn.close()
    fsync_path(target)
    if step is not None:
        step(total, total)
    return target


def swap_in(vault: Vault, target: Path, new: bytes) -> None:
    """Put ``target`` (``export_rekeyed``'s file, under the raw key ``new``) in the place
    of vault.db, and reopen the vault on it. Every connection of the vault is closed
    first, while no reading call runs (``vault.gate``) and no write (the write lock): the
    last one folds the log into the old file and deletes it, so that no page of the old
    file's log is ever read as the new file's. The rename is atomic: killed at any
    moment, vault.db is the old file whole or the new one whole."""
    try:
        with vault.gate.alone(SWAP_WAIT_S):
            _swap(vault, target, new)
    except TimeoutError:
        target.unlink(missing_ok=True)
        raise CtxError(f"a call went on reading the vault for {SWAP_WAIT_S:.0f} s: the key "
                       "rotation is undone (run it again)") from None


def _swap(vault: Vault, target: Path, new: bytes) -> None:
    wal, shm = (vault.path.with_name(vault.path.name + s) for s in ("-wal", "-shm"))
    with vault._write_lock:
        vault.guard.stop()  # a page check in a thread reads the old file: it ends first
        with vault._all_lock:
            vault._closed = True  # a read that does not hold the gate is refused meanwhile
            vault._close_connections()
        try:
            if wal.exists() and wal.stat().st_size > 0:  # another connection holds it
                target.unlink(missing_ok=True)
                raise CtxError("the vault's log is still open elsewhere: the key rotation "
                               "is undone (run it again)")
            wal.unlink(missing_ok=True)
            shm.unlink(missing_ok=True)
            os.replace(target, vault.path)
            fsync_path(vault.path.parent)
            vault._hexkey = new.hex()
        finally:
            vault._closed = False
            vault.guard.rekeyed(vault._hexkey)  # watching the file in place now
        vault._generation += 1  # every cache keyed on it is read again
        conn = vault._conn()
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
        vault.guard.wrote()
