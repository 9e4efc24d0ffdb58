"""Watching an open vault's file: damage met in a query, a file changed or replaced.

``VaultGuard`` is the open vault's memory of damage. Every vault connection sends
its errors through ``translate`` (``integrity.VaultConnection``); a failed page
check is kept, so every later call is refused with the same ``VaultDamaged``
(logged once, no content) and ``on_damage`` hears of it (the engine raises an
alert). ``check`` runs on calls at most once a second (and on ``status``): a
vault.db replaced or removed is named at once; one changed by someone other
than this engine (its size or time moved since the engine's own last write) has
every page checked again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sqlcipher3 import dbapi2 as sqlite

from engine.errors import VaultDamaged
from engine.store.vault.integrity import (
    SQLITE_IOERR,
    damage_code,
    damaged,
    failed_pages,
    pages_damaged,
)

log = logging.getLogger("ctx.vault")

PAGES_AT_OPEN_BYTES = 16 << 20  # vaults up to this size have every page checked at once (~0.1 s)
FILE_CHECK_S = 1.0  # how often calls look at vault.db's identity, size and time

Signature = tuple[int, int, int, int]  # device, inode, size, mtime (ns)


def signature(path: Path) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def vault_bytes(path: Path) -> int:
    """vault.db and its WAL, in bytes (what a page check reads, about)."""
    total = 0
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


class VaultGuard:
    def __init__(self, path: Path, hexkey: str, write_lock: threading.RLock) -> None:
        self.path = path
        self._hexkey = hexkey
        self._write_lock = write_lock  # held by every write of the engine (and checkpoint)
        self.damage: VaultDamaged | None = None
        self.on_damage: Callable[[VaultDamaged], None] | None = None
        self._sig = signature(path)
        self._looked = time.monotonic()
        self._checking = threading.Lock()  # one page check at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def small(self) -> bool:
        """Small enough for its pages to be checked in the call that asks."""
        return vault_bytes(self.path) <= PAGES_AT_OPEN_BYTES

    # -- called by the vault ------------------------------------------------------
    def tick(self) -> None:
        """At every call: refuse a damaged vault; look at the file once a second."""
        if self.damage is not None:
            raise self.latch(self.damage)
        now = time.monotonic()
        if now - self._looked > FILE_CHECK_S:
            self._looked = now
            self.check()

    def wrote(self) -> None:
        """After the engine's own write (a checkpoint may have changed vault.db): its
        size and time now are the engine's doing. Called with the write lock held."""
        sig = signature(self.path)
        if sig is not None and (self._sig is None or sig[:2] == self._sig[:2]):
            self._sig = sig

    def rekeyed(self, hexkey: str) -> None:
        """vault.db was replaced by the engine itself (a key rotation, after ``stop``):
        the new file, under ``hexkey``, is the one it watches from now on."""
        self._hexkey = hexkey
        self._sig = signature(self.path)
        self._stop.clear()

    def check(self) -> None:
        """VaultDamaged when vault.db is not the file opened; every page checked again
        when it changed behind the engine's back (in a thread for a big vault)."""
        sig = signature(self.path)
        if self._sig is None or sig == self._sig:
            return
        if sig is None or sig[:2] != self._sig[:2]:
            raise self.latch(VaultDamaged(
                "vault.db was replaced or removed while the engine ran: stop the engine "
                "(the app or `ctx serve`) and open the store again; nothing more is read "
                "or written"))
        if not self._write_lock.acquire(blocking=False):
            return  # a write of the engine's own is under way: look again later
        try:
            sig = signature(self.path)
            if sig is None or self._sig is None or sig[2:] == self._sig[2:]:
                return
            self._sig = sig
        finally:
            self._write_lock.release()
        log.warning("vault.db changed outside the engine: checking every page")
        if self.small:
            self.check_pages()
        else:
            self.check_pages_later()

    def translate(self, exc: sqlite.DatabaseError) -> BaseException:
        """What a vault connection raises for ``exc``: damage becomes VaultDamaged,
        kept for every later call; anything else stays as it is."""
        code = damage_code(exc)
        if code is None:
            return exc
        self.check()  # a replaced file explains it best
        err = damaged(code)
        # an I/O error may pass; a failed page check does not
        return err if code == SQLITE_IOERR else self.latch(err)

    def latch(self, err: VaultDamaged) -> VaultDamaged:
        """Keep ``err`` for every later call and announce it once; a copy to raise."""
        first = self.damage is None
        if first:
            self.damage = err
            log.error("vault damaged: %s", err.message)
            if self.on_damage is not None:
                try:
                    self.on_damage(err)
                except Exception:  # noqa: BLE001 - the damage is still raised
                    log.warning("damage listener failed")
        held = self.damage or err
        return VaultDamaged(held.message, **held.details)

    # -- every page ---------------------------------------------------------------
    def check_pages(self) -> None:
        """Check every page of vault.db (``integrity.failed_pages``): VaultDamaged, kept,
        when one fails. A page caught being checkpointed may fail falsely, so failing
        pages are read again with the engine's writes held (its checkpoints run in
        them): an alarm is never false. Stops when the vault closes."""
        with self._checking:
            bad = failed_pages(self.path, self._hexkey, stop=self._stop.is_set)
            if bad and not self._stop.is_set():
                with self._write_lock:
                    bad = failed_pages(self.path, self._hexkey, only=bad)
                if bad:
                    raise self.latch(pages_damaged(bad))

    def check_pages_later(self) -> None:
        """``check_pages`` in a thread (damage found reaches ``on_damage``)."""
        def run() -> None:
            try:
                self.check_pages()
            except VaultDamaged:
                pass  # latched and announced
            except Exception as exc:  # noqa: BLE001 - a check that cannot run finds nothing
                log.warning("vault page check not finished (%s)", type(exc).__name__)

        self._thread = threading.Thread(target=run, name="ctx-vault-check", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a page check running in a thread (benchmarks measure after it)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def stop(self) -> None:
        """Stop a page check in progress and wait for it (the vault closes)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
