"""One engine per data dir: an exclusive, advisory lock file held while open."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, Self

from engine.errors import StoreDamaged, StoreLocked


class DataDirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None
        self.created = False  # this lock made the file (a store being created)

    def acquire(self) -> None:
        try:
            fresh = not self.path.exists()
            # owner-only from the start, whatever the umask (never a 0644 lock file)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
            fh = os.fdopen(fd, "a+", encoding="utf-8")
        except OSError as exc:
            raise StoreDamaged(
                f"the lock file {self.path.name} cannot be opened ({exc.strerror}): if it is "
                "not a plain file, remove it and retry") from None
        try:
            if sys.platform == "win32":
                import msvcrt

                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise StoreLocked(f"another ctx engine has this data dir open: {self.path.parent}")
        self._fh = fh  # nothing is written: opening a store must not change it
        self.created = fresh

    def discard(self) -> None:
        """Release, and remove the file when this lock made it: a store that could not be
        created leaves no lock file behind (removed while still held)."""
        if self._fh is not None and self.created:
            try:
                self.path.unlink()
            except OSError:
                pass
        self.release()

    def release(self) -> None:
        if self._fh is None:
            return
        try:
            if sys.platform == "win32":
                import msvcrt

                self._fh.seek(0)
                msvcrt.locking(self._fh.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
        finally:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
