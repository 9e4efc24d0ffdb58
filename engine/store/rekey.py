"""A new key for the vault: SQLCipher's rekey, on a closed store.

``PRAGMA rekey`` rewrites every page under the new key in one transaction (in WAL
mode too): killed at any moment, the vault opens with the old key or the new
one, whole (checked by tests/engine/test_key_rotation_kill.py). Before the key
changes, the key of the names' keyed hashes is kept in the vault itself
(``name_key``), so that the hashes stored under it (a deleted transcript's
path, which a later sync must still skip) keep meaning the same names.
"""

from __future__ import annotations

from pathlib import Path

from sqlcipher3 import dbapi2 as sqlite

from engine.errors import CtxError, WrongKey
from engine.store.integrity import damage_code, damaged, quiet
from engine.store.vault import store_error

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
    from engine.store.integrity import probe

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
