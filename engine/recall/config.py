"""The recall config section ([recall]): transcript chunks, privacy, folders, auto recall."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ConfigError
from engine.recall.chunks import RecallChunkConfig
from engine.recall.privacy import PrivacyConfig


@dataclass(frozen=True)
class RecallConfig:
    chunks: RecallChunkConfig = field(default_factory=RecallChunkConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    folders: tuple[str, ...] = ()  # extra transcript folders; defaults are added when present
    auto_budget: int = 4000
    recent_sessions: int = 5

    def __post_init__(self) -> None:
        for folder in self.folders:
            # read by the engine that runs, wherever it was started: never relative
            if not folder.strip() or not Path(folder).expanduser().is_absolute():
                raise ConfigError(f"recall.folders: {folder!r} is not an absolute path",
                                  key="recall.folders")
        if not 0 <= self.auto_budget <= 200_000:  # recall --auto's own bound on a budget
            raise ConfigError("recall.auto_budget must be between 0 and 200000",
                              key="recall.auto_budget")
        if not 0 <= self.recent_sessions <= 1000:
            raise ConfigError("recall.recent_sessions must be between 0 and 1000",
                              key="recall.recent_sessions")
