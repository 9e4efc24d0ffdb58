"""Scheduled backups (Settings -> Security; off by default): every ``every_hours`` the
store is backed up into ``folder`` and the app's older backups there beyond ``keep``
are deleted.

A timer checks every few minutes (and when the engine opens or the config changes)
whether a backup is due, from the store's own date of its last backup, so that a
backup made by hand (``ctx backup``, Back up now) counts too. The backup runs in the
host's pool like any other engine call; a failure reaches the window through the
host's ``failed`` signal, never only a log.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop.qt import QObject, QTimer, Signal
from engine import BackupResult, backup_due, backups_to_prune

CHECK_MS = 5 * 60 * 1000  # a due backup starts within five minutes


def backup_and_prune(engine: Any, folder: Path, keep: int) -> BackupResult:
    """Worker: back up into ``folder`` (made owner-only if absent), then delete the app's
    backups there beyond the newest ``keep`` and stale unfinished ones."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    result: BackupResult = engine.backup(str(folder))
    now = time.time()
    with os.scandir(folder) as entries:
        files = [(e.name, e.stat().st_mtime) for e in entries if e.is_file()]
    for name in backups_to_prune(files, keep, now):
        (folder / name).unlink(missing_ok=True)
    return result


class BackupScheduler(QObject):
    """Runs the scheduled backups of ``host``'s store; ``backed_up(result)`` after each."""

    backed_up = Signal(object)  # BackupResult

    def __init__(self, host: Any, parent: QObject | None = None, *, check_ms: int = CHECK_MS,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.host = host
        self.clock = clock
        self.running = False
        self.timer = QTimer(self)
        self.timer.setInterval(check_ms)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        host.ready.connect(self.check)
        host.config_changed.connect(self.check)

    def _settings(self) -> Any:
        config = getattr(self.host, "config", None)
        return getattr(config, "backup", None)

    def check(self) -> None:
        """Start a backup if the schedule is on and one is due (the date is read first)."""
        cfg = self._settings()
        if self.running or cfg is None or not cfg.schedule or not self.host.engine_ready:
            return
        self.running = True
        self.host.run(lambda e: e.status().last_backup, self._decide, self._failed,
                      name="scheduled_backup")

    def _decide(self, last: float | None) -> None:
        cfg = self._settings()
        if cfg is None or not cfg.schedule or not backup_due(last, self.clock(),
                                                             cfg.every_hours):
            self.running = False
            return
        folder, keep = Path(cfg.folder).expanduser(), cfg.keep
        task = self.host.run(lambda e: backup_and_prune(e, folder, keep), self._done,
                             self._failed, name="scheduled_backup")
        if task is None:
            self.running = False

    def _done(self, result: BackupResult) -> None:
        self.running = False
        self.backed_up.emit(result)

    def _failed(self, exc: BaseException) -> None:
        from desktop.notices import Failure, error_info

        self.running = False
        self.host.failed.emit(Failure("scheduled_backup", error_info(exc)))
