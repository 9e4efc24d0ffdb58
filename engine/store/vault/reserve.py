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

    def ensure(self) -> None:
        """Make the reserve if missing and the disk has room for it twice over."""
        if self.path.exists():
            return
        try:
            st = os.statvfs(self.path.parent)
            if st.f_bavail * st.f_frsize < 2 * RESERVE_BYTES:
                return
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except (OSError, AttributeError):
            return
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, RESERVE_BYTES)  # real blocks, not a sparse file
            else:  # pragma: no cover - platforms without it
                os.write(fd, b"\0" * RESERVE_BYTES)
            os.fsync(fd)
        except OSError:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            return
        os.close(fd)

    def release(self) -> bool:
        """Give the reserved space back; False when there was none to give."""
        try:
            self.path.unlink()
        except OSError:
            return False
        log.warning("disk full: the space reserved for clean-up is used")
        return True
