"""The backup config section ([backup]): the app's scheduled backups, off by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError


@dataclass(frozen=True)
class BackupConfig:
    """``schedule``: the app backs the store up every ``every_hours`` hours into ``folder``
    and keeps the newest ``keep`` backups there (older ones it made are deleted)."""

    schedule: bool = False
    folder: str = ""
    keep: int = bounded(7, 1, 1000)
    every_hours: float = bounded(24.0, 1.0, 24 * 366)

    def __post_init__(self) -> None:
        check_bounds(self, "backup")
        if self.schedule and not self.folder.strip():
            raise ConfigError("backup.folder: scheduled backups need a folder",
                              key="backup.folder")
        if self.folder and not Path(self.folder).expanduser().is_absolute():
            raise ConfigError(f"backup.folder: {self.folder} is not an absolute path",
                              key="backup.folder")
