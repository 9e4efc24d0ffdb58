"""Room kept for cleaning up after the disk fills: a file of zeros in the data dir.

When a write fails for lack of space, what the failed batch had stored must go
(its sources were written pending, before their vectors), but a delete needs room
too: SQLite writes it to the WAL first. So the data dir keeps ``space.reserve``
(``RESERVE_BYTES`` of real blocks, made at open when the disk has room for it),
given back at the moment a clean-up meets a full disk, and made again at a later
open with room. It holds nothing but zeros.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("ctx.vault")

RESERVE_NAME = "space.reserve"
RESERVE_BYTES = 2 << 20  # a failed batch's clean-up (64 chunks, FTS, zeroed pages) fits


class Reserve:
    def __init__(self, root: Path) -> None:
        self.path = root / RESERVE_NAME
        self._lent_from: int | None = None  # the reserve's size before a ``lend``

    def ensure(self) -> None:
        """Make the reserve, or fill it up again after a ``lend``, when the disk has room
        for what it lacks twice over."""
        try:
            held = self.path.stat().st_size
        except OSError:
            held = None
        if held is not None and held >= RESERVE_BYTES:
            return
        try:
            st = os.statvfs(self.path.parent)
            if st.f_bavail * st.f_frsize < 2 * (RESERVE_BYTES - (held or 0)):
                return
            flags = os.O_WRONLY | (os.O_CREAT | os.O_EXCL if held is None else 0)
            fd = os.open(self.path, flags, 0o600)
        except (OSError, AttributeError):
            return
        try:
            _allocate(fd)
        except OSError:
            os.close(fd)
            if held is None:
                self.path.unlink(missing_ok=True)
            return
        os.close(fd)

    def lend(self, room: int) -> bool:
        """Make ``room`` bytes free on a full disk by shortening the reserve (what a reader
        needs to open the vault: its WAL index), keeping the rest for clean-up; nothing
        when the disk has that much free already. ``ensure`` fills it up again at a later
        open with room, ``repay`` at once. False when there was nothing to lend."""
        try:
            st = os.statvfs(self.path.parent)
            if st.f_bavail * st.f_frsize >= room:
                return False
            held = self.path.stat().st_size
            os.truncate(self.path, max(0, held - room))
        except (OSError, AttributeError):
            return False
        self._lent_from = held
        log.warning("disk full: %d KiB of the space reserved for clean-up lent to the open",
                    room >> 10)
        return True

    def repay(self) -> None:
        """Fill the reserve up again to its size before ``lend`` (an open that failed
        gives back what it took: it leaves the data dir as it found it)."""
        size, self._lent_from = self._lent_from, None
        if size is None:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except OSError:
            return
        try:
            _allocate(fd, size)
        except OSError:
            pass
        finally:
            os.close(fd)

    def release(self) -> bool:
        """Give the reserved space back; False when there was none to give."""
        try:
            self.path.unlink()
        except OSError:
            return False
        log.warning("disk full: the space reserved for clean-up is used")
        return True


def _allocate(fd: int, size: int = RESERVE_BYTES) -> None:
    """Give the reserve's file ``size`` bytes of real blocks (not a sparse file)."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:  # pragma: no cover - platforms without it
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b"\0" * size)
    os.fsync(fd)
