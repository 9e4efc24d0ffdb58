"""The recall config section ([recall]): transcript chunks, privacy, folders, auto recall."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.recall.chunks import RecallChunkConfig
from engine.recall.privacy import PrivacyConfig


@dataclass(frozen=True)
class RecallConfig:
    chunks: RecallChunkConfig = field(default_factory=RecallChunkConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    folders: tuple[str, ...] = ()  # extra transcript folders; defaults are added when present
    auto_budget: int = 4000
    recent_sessions: int = 5
