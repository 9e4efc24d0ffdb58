"""The backup config section ([backup]): the app's scheduled backups, off by default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError


@dataclass(frozen=True)
class BackupConfig:
    """``schedule``: the app backs the store up every ``every_hours`` hours into ``folder``
    and keeps the newest ``keep`` backups there (older ones it made are deleted)."""

    schedule: bool = False
    folder: str = ""
    keep: int = 7
    every_hours: float = 24.0

    def __post_init__(self) -> None:
        if self.schedule and not self.folder.strip():
            raise ConfigError("backup.folder: scheduled backups need a folder",
                              key="backup.folder")
        if self.folder and not Path(self.folder).expanduser().is_absolute():
            raise ConfigError(f"backup.folder: {self.folder} is not an absolute path",
                              key="backup.folder")
        if isinstance(self.keep, bool) or not 1 <= self.keep <= 1000:
            raise ConfigError("backup.keep must be between 1 and 1000", key="backup.keep")
        if not 1.0 <= float(self.every_hours) <= 24 * 366:
            raise ConfigError("backup.every_hours must be between 1 and 8784",
                              key="backup.every_hours")
