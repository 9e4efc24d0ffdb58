"""The recall config section ([recall]): transcript chunks, privacy, folders, auto recall."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    # Tokens of a recall hit's excerpt (the lines that answer). Hand-set: ten hits of
    # 120 stay near the 2,000 tokens an agent's tool result can take without crowding.
    hit_excerpt_tokens: int = 120
    # How far (in chunks, either side) a hit's turn is read to tell what came of it.
    # Hand-set: the longest turn of the benchmark sessions holds under 60 chunks.
    turn_reach: int = 60

    def __post_init__(self) -> None:
        if not 16 <= self.hit_excerpt_tokens <= 4000:
            raise ConfigError("recall.hit_excerpt_tokens must be in 16..4000",
                              key="hit_excerpt_tokens")
        if not 0 <= self.turn_reach <= 1000:
            raise ConfigError("recall.turn_reach must be in 0..1000", key="turn_reach")
