"""The recall config section ([recall]): transcript chunks, privacy, folders, auto recall."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ConfigError
from engine.recall.chunks import RecallChunkConfig
from engine.recall.privacy import PrivacyConfig
from engine.retrieval.adapt import AdaptConfig
from engine.retrieval.turn_roles import TurnRoleConfig


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
    # What a recall hit is: "turn" (a turn's best chunks in one text; see
    # engine.flows.recall_turns) or "chunk". Recall questions, dev split, `python -m
    # bench.recall_quality --split dev` (2026-11-25): hit@5 / tokens of the top 5 /
    # hit@5 of the excerpts: turn 0.689 / 1658 / 0.395, chunk 0.605 / 827 / 0.504
    # (chunk hit@10, about the tokens of 5 turns: 0.697). "chunk" by default: the CLI,
    # MCP and hook show a hit's excerpt, and chunk excerpts answer more often (dev 0.504
    # vs 0.395) at half the tokens.
    hit_unit: str = "chunk"
    # Tokens of a turn hit's text. Hand-set to the largest chunk (chunks.max_tokens'
    # default): a turn hit costs no more than one chunk hit can (dev: 240 gave hit@5
    # 0.605 at 1067 tokens, 160 gave 0.487).
    turn_hit_tokens: int = 400
    # How far (in chunks, either side) a hit's turn is read to tell what came of it.
    # Hand-set: the longest turn of the benchmark sessions holds under 60 chunks.
    turn_reach: int = 60
    # Learn the user's own words from their sessions (engine/retrieval/adapt.py): fitted
    # in the background after a sync, kept in the vault. Dev split, `python -m
    # bench.recall_adapt --split dev` (2026-11-28): see adapt_fit's origins.
    adapt: bool = True
    adapt_fit: AdaptConfig = field(default_factory=AdaptConfig)
    # The parts of a call or request (chunks.py: a call's whole input and output, a long
    # request whole; engine.flows.recall_parts). Dev split, `python -m
    # bench.recall_quality --split dev` ranking as a scratch A/B in one run (2026-11-28,
    # 10,613 chunks, load 2-4): penalty 0 / 0.05 / 0.1 / 0.2 with parts in the vector
    # lane: hit@5 0.555 / 0.571 / 0.571 / 0.571, agent view 0.605 / 0.655 / 0.655 / 0.655.
    # Subtracted from a part's rerank score: the least of the equal ones.
    part_penalty: float = 0.05
    # Whether parts are in the vector lane (they stay in the keyword lane). Same run:
    # out of it, penalty 0 / 0.05: hit@5 0.571 / 0.613 (paired +0.059 [+0.01, +0.11] on
    # 0.555), agent view 0.639 / 0.647 (+0.042 [-0.01, +0.09]); no kind lower than with
    # both off. Merging a call and its parts into one hit gave 0.546 / 0.605 alone and
    # nothing on top of these two (dropped).
    part_vector: bool = False
    # The chunk of the role a question asks for (engine.retrieval.turn_roles): the
    # closing summary, a call's result, the call, a tool it names. Dev split, scratch
    # A/B of the bonuses on one engine (bench.recall_quality's rank_all/view_all,
    # 2026-11-28, 10,613 chunks, load 3-6): hit@5 / hit@10 / agent view, base 0.622 /
    # 0.697 / 0.672; named 0.03 0.639 / 0.706 / 0.689, 0.05 0.639 / 0.706 / 0.697, 0.07
    # 0.622 / 0.697 / 0.689; ending 0.05 one rank up (5 -> 3), nothing else moved; output
    # 0.02 lost a tool_result question at 10 (0.697 -> 0.689); call 0.05 alone +2 at 5 and
    # +1 in view, but with named 0.05 a loss at 5: so named 0.05 and ending 0.05, the
    # others 0 (their cues kept, for a user's config).
    turn_roles: TurnRoleConfig = field(default_factory=TurnRoleConfig)

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
        if not 16 <= self.hit_excerpt_tokens <= 4000:
            raise ConfigError("recall.hit_excerpt_tokens must be in 16..4000",
                              key="recall.hit_excerpt_tokens")
        if self.hit_unit not in ("turn", "chunk"):
            raise ConfigError("recall.hit_unit must be 'turn' or 'chunk'", key="recall.hit_unit")
        if not 64 <= self.turn_hit_tokens <= 8192:
            raise ConfigError("recall.turn_hit_tokens must be in 64..8192",
                              key="recall.turn_hit_tokens")
        if not 0 <= self.part_penalty <= 1:
            raise ConfigError("recall.part_penalty must be in 0..1", key="recall.part_penalty")
        if not 0 <= self.turn_reach <= 1000:
            raise ConfigError("recall.turn_reach must be in 0..1000", key="recall.turn_reach")
