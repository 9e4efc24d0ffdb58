"""A damaged vault, named wherever it shows: at open, in any query, or under a running engine.

SQLCipher keeps an HMAC per page: a flipped bit fails its page's check when the
page is read ("database disk image is malformed", SQLITE_CORRUPT), or, in page 1,
makes the file unreadable with the key (SQLITE_NOTADB). Three parts:

- ``probe`` opens the vault read-only before anything else does, so that a vault
  refused (another store's, damaged, too new) is left byte for byte as it was: a
  read-write connection would merge whatever WAL lies beside it into vault.db
  when it closes, even under the wrong key. It can check every page's HMAC too.
  One state only a read-write connection mends: a WAL index (-shm) left stale by a
  process killed as it started a new log, which a read-only reader can never use
  (it retried for 10 s, then said "busy", on every open after). ``probe`` rebuilds
  that index first, as any read-write open after a crash does (only under a key
  that vault.db's first page verifies); the data dir's lock, held by its caller,
  means no other engine has the vault.
- ``VaultConnection`` (every connection the vault makes) turns those errors,
  in whatever query meets them, into ``VaultDamaged``, and tells the vault, which
  refuses every call from then on (``Vault.damage``).
- ``failed_pages`` checks every page's HMAC as SQLCipher does on read, so that
  damage in a page no query reads is found: before the open returns for a small
  vault, in a thread for a big one (``guard.VaultGuard``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlcipher3 import dbapi2 as sqlite

from engine.errors import StoreLocked, VaultDamaged, WrongKey
from engine.store.vault.migrations import check_version

log = logging.getLogger("ctx.vault")

# Extended result codes reduce to these primary ones (code & 0xff).
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB = 10, 11, 26
SQLITE_BUSY, SQLITE_PROTOCOL = 5, 15  # a lock held or being recovered: not damage
BUSY_TRIES = 6  # the open check tried again at 0.1, 0.2 ... 3.2 s: 6.3 s at most
BUSY_WAIT_S = 30.0  # how long the connection that rebuilds a stale WAL index waits on a lock
WAL_HEADER, WAL_INDEX_HEADER = 32, 48  # bytes: the -wal's header, one copy of the -shm's
PAGE, HMAC_SIZE = 4096, 64  # SQLCipher 4's defaults: page size, HMAC-SHA512 at its end
# SQLite never writes the page holding byte 0x40000000 (its lock bytes): a vault past
# 1 GiB has it as zeros, with no HMAC, and checking it was a false alarm
LOCK_PAGE = 0x40000000 // PAGE + 1
HMAC_SALT_MASK = 0x3A
CHECK_BLOCK = 1 << 20  # bytes read at a time by the page check
CHECK_PAUSE_S = 0.001  # its pause between blocks (549 MB: 0.5 s of pauses)
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))
RESTORE = "restore it from a backup of this store (`ctx repair` cannot rebuild text)"

Translate = Callable[[sqlite.DatabaseError], BaseException]


def damage_code(exc: BaseException) -> int | None:
    """SQLITE_CORRUPT, SQLITE_NOTADB or SQLITE_IOERR when ``exc`` says the vault's file
    is damaged or unreadable; None for anything else (a lock, a full disk, a bug)."""
    if not isinstance(exc, sqlite.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:  # no code: only a plain DatabaseError is a damaged file
        return SQLITE_CORRUPT if type(exc) is sqlite.DatabaseError else None
    primary = int(code) & 0xFF
    return primary if primary in (SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB) else None


def damaged(code: int, running: bool = True) -> VaultDamaged:
    """The error for a damage of ``code`` met in a query (of a running engine)."""
    when = " while the engine ran" if running else ""
    if code == SQLITE_NOTADB:
        return VaultDamaged(f"vault.db can no longer be read with this store's key{when}: it "
                            f"was replaced or damaged; {RESTORE}")
    if code == SQLITE_IOERR:
        return VaultDamaged(f"vault.db could not be read{when} (I/O error): check the disk, "
                            "then open the store again")
    return VaultDamaged(f"vault.db is damaged: a page failed its integrity check{when}; "
                        f"{RESTORE}")


def _naming_damage(method: Callable[..., Any]) -> Callable[..., Any]:
    """``sqlite.Cursor``'s ``method``, its damage errors raised as ``VaultDamaged``."""

    def call(self: VaultCursor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except sqlite.DatabaseError as exc:
            raise self._fail(exc) from None
    call.__name__ = method.__name__
    return call


class VaultCursor(sqlite.Cursor):
    """A cursor whose damage errors come out as ``VaultDamaged`` (see the module doc)."""

    def _fail(self, exc: sqlite.DatabaseError) -> BaseException:
        return getattr(self.connection, "translate", _same)(exc)

    execute = _naming_damage(sqlite.Cursor.execute)
    executemany = _naming_damage(sqlite.Cursor.executemany)
    fetchone = _naming_damage(sqlite.Cursor.fetchone)
    fetchmany = _naming_damage(sqlite.Cursor.fetchmany)
    fetchall = _naming_damage(sqlite.Cursor.fetchall)
    __next__ = _naming_damage(sqlite.Cursor.__next__)


class VaultConnection(sqlite.Connection):
    """A vault connection; ``translate`` (set by the vault) maps a damage error to the
    error to raise, and anything else to itself."""

    translate: Translate

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or VaultCursor)

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any) -> Any:
        return self.cursor().executemany(sql, seq)


def _same(exc: sqlite.DatabaseError) -> BaseException:
    return exc


def open_readonly(path: Path, hexkey: str, *, shm: bool = False) -> Any:
    """A read-only connection to the vault, keyed (it never checkpoints, even when it
    closes last); with ``shm``, the -shm beside it is opened read-only too (untouched)."""
    uri = f"{path.resolve().as_uri()}?mode=ro" + ("&readonly_shm=1" if shm else "")
    conn = sqlite.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    quiet(conn)
    conn.execute(f"PRAGMA key = \"x'{hexkey}'\"")
    return conn


def is_busy(exc: BaseException) -> bool:
    """A lock another connection holds, or WAL locks being recovered after a process was
    killed (SQLITE_BUSY, SQLITE_PROTOCOL): the file is sound; trying again later helps."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and int(code) & 0xFF in (SQLITE_BUSY, SQLITE_PROTOCOL):
        return True
    text = str(exc).lower()
    return "locking protocol" in text or "database is locked" in text


class _Busy(Exception):
    def __init__(self, stale: bool) -> None:
        super().__init__()
        self.stale = stale  # SQLITE_PROTOCOL: a WAL index no read-only reader can use


def stale_index(path: Path) -> bool:
    """Whether the WAL index beside ``path`` (its -shm) cannot serve a read-only reader,
    as a process killed while it started a new log leaves it: its header names other
    salts than the -wal's own (never set: zeros), or frames where no log is. A read-only
    reader with no other process on the file reads the log by that header and retries
    until SQLITE_PROTOCOL (the layout: https://www.sqlite.org/walformat.html). False when
    there is no index or no log to read."""
    try:
        with open(path.with_name(path.name + "-shm"), "rb") as fh:
            head = fh.read(WAL_INDEX_HEADER)
        with open(path.with_name(path.name + "-wal"), "rb") as fh:
            log_head = fh.read(WAL_HEADER)
    except OSError:
        return False
    if len(head) < WAL_INDEX_HEADER:
        return True
    if len(log_head) < WAL_HEADER:  # no log: the index must say so (mxFrame 0)
        return head[16:20] != bytes(4)
    return head[32:40] != log_head[16:24]  # aSalt against the log's salts


def rebuild_index(path: Path, hexkey: str) -> bool:
    """Rebuild a stale WAL index with a read-write connection, as any read-write open
    after a crash does (from the log's committed frames; closing, it folds them into
    vault.db, the same content). Whatever else fails here, the probe after names it.
    Only under a key that vault.db's first page was written with (its HMAC checked here,
    no SQLite): under another, the connection would still fold the log into vault.db
    as it closes, and a refused vault is left as it was found. False: not rebuilt."""
    if not keyed(path, hexkey):
        return False
    log.warning("the vault's WAL index was left stale by a process stopped mid-write: "
                "rebuilding it")
    try:
        conn = sqlite.connect(str(path), isolation_level=None, timeout=BUSY_WAIT_S)
    except sqlite.Error as exc:  # a read-only data dir, say: the probe after says busy
        log.warning("the vault's WAL index could not be rebuilt (%s)", type(exc).__name__)
        return True
    try:
        quiet(conn)
        conn.execute(f"PRAGMA key = \"x'{hexkey}'\"")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite.Error as exc:
        log.warning("the vault's WAL index could not be rebuilt (%s)", type(exc).__name__)
    finally:
        conn.close()
    return True


def keyed(path: Path, hexkey: str) -> bool:
    """Whether vault.db's first page passes its HMAC under ``hexkey`` (SQLCipher 4's
    layout, as ``failed_pages`` checks it): the vault was written with this key."""
    try:
        if path.stat().st_size < PAGE:
            return False
        return not _hmac_failures(path, hexkey, only=[1])
    except OSError:
        return False


def probe(path: Path, hexkey: str, *, pages: bool) -> None:
    """:func:`probe_once`, tried again while the vault is busy (another connection holds
    its locks). Still busy: StoreLocked. A WAL index that a kill -9 left stale
    (``stale_index``, or met as SQLITE_PROTOCOL, "locking protocol") is rebuilt once
    first: a read-only reader never can, and every open after a kill at that moment said
    "busy" for good (found by test_kill_during_an_online_rotation in CI). Not under a
    key that did not write vault.db (``keyed``): such an index then says WrongKey."""
    tried = stale_index(path)  # a rebuild tried (once at most)
    rebuilt = tried and rebuild_index(path, hexkey)
    tries = 0
    while True:
        try:
            probe_once(path, hexkey, pages=pages)
            return
        except _Busy as busy:
            if busy.stale and not tried:  # then checked again: not counted as a try
                tried = True
                rebuilt = rebuild_index(path, hexkey)
                continue
            if busy.stale and not rebuilt:  # no rebuild: the key did not write vault.db
                raise _wrong_key() from None
            tries += 1
            if tries == BUSY_TRIES:
                raise StoreLocked("vault.db is busy: another process holds its locks; try "
                                  "again in a moment") from None
            time.sleep(0.1 * 2 ** (tries - 1))


def probe_once(path: Path, hexkey: str, *, pages: bool) -> None:
    """Open ``path`` read-only with the key and check what an open needs, changing no
    byte on disk (an -shm or empty -wal this makes is removed again). Raises WrongKey
    (another store's vault, or page 1 damaged), StoreTooNew, or VaultDamaged (with
    ``pages``: any page failing its HMAC)."""
    if not path.exists():
        return  # a new store's vault: made by the read-write open
    sidecars = [path.with_name(path.name + s) for s in ("-wal", "-shm")]
    made = [p for p in sidecars if not p.exists()]
    conn = open_readonly(path, hexkey, shm=sidecars[1].exists())
    try:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite.DatabaseError as exc:
            if damage_code(exc) == SQLITE_NOTADB or "encrypted" in str(exc):
                raise _wrong_key() from None
            raise _open_error(exc) from None
        try:
            check_version(conn)
            if pages:
                bad = failed_pages(path, hexkey)
                if bad:
                    raise pages_damaged(bad)
        except sqlite.DatabaseError as exc:
            raise _open_error(exc) from None
    finally:
        conn.close()
        for p in made:  # a read-only open never checkpoints; what it made goes
            try:
                if p.name.endswith("-shm") or p.stat().st_size == 0:
                    p.unlink()
            except OSError:
                pass


def _wrong_key() -> WrongKey:
    return WrongKey("vault.db cannot be decrypted with this store's key: it belongs to "
                    "another store (or its first page is damaged); restore this store's "
                    "vault.db from a backup")


def _open_error(exc: sqlite.DatabaseError) -> Exception:
    if is_busy(exc):
        code = getattr(exc, "sqlite_errorcode", None)
        return _Busy(stale=(int(code) & 0xFF == SQLITE_PROTOCOL) if code is not None
                     else "locking protocol" in str(exc).lower())
    code = damage_code(exc)
    if code is not None:
        return damaged(code, running=False)
    return VaultDamaged(f"vault.db cannot be opened ({type(exc).__name__}: {str(exc)[:80]}); "
                        f"{RESTORE}")


def quiet(conn: Any) -> None:
    """Keep SQLCipher's own log off stderr: ctx names the error itself."""
    try:
        conn.execute("PRAGMA cipher_log_level = NONE")
    except sqlite.Error:
        pass


def failed_pages(path: Path, hexkey: str, *, stop: Callable[[], bool] | None = None,
                 only: Sequence[int] | None = None) -> list[int]:
    """The pages of ``path`` whose HMAC fails, as SQLCipher 4 checks them on read:
    HMAC-SHA512 over the page's ciphertext and IV and its number (4 bytes, little
    endian), under a key derived from the raw key and the file's salt (PBKDF2, 2
    rounds, salt ^ 0x3a). Read here rather than by ``PRAGMA cipher_integrity_check``,
    which cannot be stopped: this stops at ``stop()`` (checked every MB, with a pause
    that lets queries run first) and can check ``only`` some pages again. Each page is
    hashed with the GIL released (hashlib does for 2 KB and more). SQLite's lock-byte
    page (``LOCK_PAGE``, in vaults over 1 GiB) holds no data and is not checked."""
    bad = _hmac_failures(path, hexkey, stop=stop, only=only)
    if bad and bad[0] == 1 and _sqlcipher_reads(path, hexkey):
        # SQLCipher reads page 1 while this check fails it: the vault is not laid out as
        # checked here (other cipher settings); say nothing rather than a false alarm
        log.warning("vault page check skipped: the vault's page format is not SQLCipher 4's "
                    "default")
        return []
    return bad


def _hmac_failures(path: Path, hexkey: str, *, stop: Callable[[], bool] | None = None,
                   only: Sequence[int] | None = None) -> list[int]:
    """``failed_pages``'s check itself (no second opinion from SQLCipher)."""
    bad: list[int] = []
    with open(path, "rb") as fh:
        salt = fh.read(16)
        if len(salt) < 16:
            return bad
        key = hashlib.pbkdf2_hmac("sha512", bytes.fromhex(hexkey),
                                  bytes(b ^ HMAC_SALT_MASK for b in salt), 2, 32)
        inner = hashlib.sha512(key.ljust(128, b"\0").translate(_IPAD))
        outer = hashlib.sha512(key.ljust(128, b"\0").translate(_OPAD))
        size = os.fstat(fh.fileno()).st_size
        wanted = sorted(set(only)) if only is not None else range(1, size // PAGE + 1)
        block: tuple[int, bytes] = (0, b"")
        for pgno in wanted:
            start_page, data = block
            at = (pgno - start_page) * PAGE
            if not data or at < 0 or at + PAGE > len(data):
                if stop is not None and stop():
                    break
                time.sleep(CHECK_PAUSE_S)  # a query waiting for the GIL gets it first
                data = os.pread(fh.fileno(), CHECK_BLOCK, (pgno - 1) * PAGE)
                block, at = (pgno, data), 0
            page = data[at:at + PAGE]
            if len(page) < PAGE or pgno == LOCK_PAGE:
                continue
            start = 16 if pgno == 1 else 0  # page 1 begins with the salt, in the clear
            h = inner.copy()
            h.update(page[start:PAGE - HMAC_SIZE])
            h.update(pgno.to_bytes(4, "little"))
            mac = outer.copy()
            mac.update(h.digest())
            if not hmac.compare_digest(mac.digest(), page[PAGE - HMAC_SIZE:]):
                bad.append(pgno)
    return bad


def _sqlcipher_reads(path: Path, hexkey: str) -> bool:
    """Whether SQLCipher itself reads the vault's first page (its own HMAC check)."""
    try:
        conn = open_readonly(path, hexkey, shm=path.with_name(path.name + "-shm").exists())
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite.Error:
        return False
    return True


def pages_damaged(bad: Sequence[int]) -> VaultDamaged:
    shown = ", ".join(str(p) for p in list(bad)[:5]) + (", ..." if len(bad) > 5 else "")
    return VaultDamaged(f"vault.db is damaged: {len(bad)} page(s) failed the integrity check "
                        f"(page {shown}); {RESTORE}", pages=list(bad)[:20])
