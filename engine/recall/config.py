"""The recall config section ([recall]) and its tables: transcript chunks ([recall.chunks]),
privacy ([recall.privacy]), folders, auto recall. Each constant's origin is one line;
figures in docs/tuning.md."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError
from engine.retrieval.config import AdaptConfig, TurnRoleConfig

DEFAULT_MISTAKE_PATTERNS: tuple[str, ...] = (
    r"\bI made (?:a|an|the) (?:mistake|error)\b",
    r"\bmy (?:mistake|bad)\b",
    r"\bthat (?:was|is) (?:wrong|incorrect|my (?:mistake|error|fault))\b",
    r"\bI was wrong\b",
    r"\bI apologi[sz]e\b",
    r"\bsorry (?:about|for) (?:that|the confusion|the mistake)\b",
    r"\byou'?re (?:absolutely |completely |totally )?right[,.!]?\s+(?:I\b|I'|my\b)",
    r"\bI (?:incorrectly|mistakenly|wrongly)\b",
    r"\bI introduced (?:a|an|the|this) (?:bug|regression|error)\b",
    r"\bwait,? that'?s (?:wrong|not right)\b",
)


BUDGET_FILLS = ("none", "best", "even")  # recall.budget_fill's values (engine.flows.recall.hits)


@dataclass(frozen=True)
class RecallChunkConfig:
    """Sizes and rules of transcript chunks ([recall.chunks], read by
    ``engine.recall.chunks``; tokens are cl100k tokens). Hand-set (docs/tuning.md)."""

    max_tokens: int = bounded(400, 64, 8192)  # hard limit of every chunk
    question_tokens: int = bounded(100, 1)  # the user request quoted in a turn pair
    context_question_tokens: int = bounded(40, 1)  # the request above a thinking chunk
    tool_input_tokens: int = bounded(120, 1)  # tool input summary
    tool_output_tokens: int = bounded(120, 1)  # tool output: its head and, mostly, its tail
    tool_intent_tokens: int = bounded(60, 1)  # the words before a tool call (why it ran)
    code_context_tokens: int = bounded(60, 1)  # the sentence introducing a code block
    min_thinking_tokens: int = bounded(16, 0)  # shorter reasoning (a bare heading) is skipped
    max_parts: int = bounded(32, 1)  # a longer answer, reasoning or code block is cut here
    # parts of a tool's whole input/output (0: none): bench.recall_coverage (docs/tuning.md)
    max_tool_parts: int = bounded(64, 0)
    skip_sibling_errors: bool = True
    mistake_patterns: tuple[str, ...] = DEFAULT_MISTAKE_PATTERNS  # regexes, case-insensitive

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> ConfigError:
            return ConfigError(f"recall.chunks.{key}: {why}", key=f"recall.chunks.{key}")

        check_bounds(self, "recall.chunks")
        for key in ("question_tokens", "context_question_tokens", "code_context_tokens"):
            if getattr(self, key) > self.max_tokens // 2:
                raise bad(key, "must be at most half of max_tokens")
        if (self.tool_input_tokens + self.tool_output_tokens + self.tool_intent_tokens
                + self.context_question_tokens + 32 > self.max_tokens):
            raise bad("tool_output_tokens",
                      "a tool call's request, intent, input and output must fit in max_tokens")
        try:
            if self.mistake_patterns:  # compiled as engine.recall.chunks compiles them
                re.compile("|".join(f"(?:{p})" for p in self.mistake_patterns), re.IGNORECASE)
        except re.error as exc:
            raise bad("mistake_patterns", "a pattern is not a valid regular expression") from exc


@dataclass(frozen=True)
class PrivacyConfig:
    """What to keep out of recall.

    ``exclude_projects``: project names (or cwd paths, when a pattern has a
    "/") as shell-style patterns, case-insensitive. ``exclude_tools``: tool
    names as patterns (e.g. ``"mcp__private-journal__*"``). ``mask_secrets``:
    replace things that look like credentials with "[REDACTED]".
    """

    exclude_projects: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    mask_secrets: bool = True

    def __post_init__(self) -> None:
        for name in ("exclude_projects", "exclude_tools"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, (tuple, list)):
                raise ConfigError(f"recall.privacy.{name}: expected a list of patterns",
                                  key=f"recall.privacy.{name}")
            if any(not isinstance(p, str) or not p.strip() for p in value):
                raise ConfigError(f"recall.privacy.{name}: patterns must be non-empty strings",
                                  key=f"recall.privacy.{name}")
            object.__setattr__(self, name, tuple(value))
        if not isinstance(self.mask_secrets, bool):
            raise ConfigError("recall.privacy.mask_secrets: expected true or false",
                              key="recall.privacy.mask_secrets")


@dataclass(frozen=True)
class RecallConfig:
    chunks: RecallChunkConfig = field(default_factory=RecallChunkConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    folders: tuple[str, ...] = ()  # extra transcript folders; defaults are added when present
    auto_budget: int = bounded(4000, 0, 200_000)  # recall --auto's own bound on a budget
    recent_sessions: int = bounded(5, 0, 1000)
    # Tokens of a recall hit's excerpt: hand-set, ten hits stay near 2,000 tokens.
    hit_excerpt_tokens: int = bounded(120, 16, 4000)
    # a hit is a "turn" or a "chunk": recall dev, bench.recall_quality (docs/tuning.md)
    hit_unit: str = "chunk"
    # Tokens of a turn hit's text: hand-set to chunks.max_tokens' default (docs/tuning.md).
    turn_hit_tokens: int = bounded(400, 64, 8192)
    # chunks read either side of a hit to tell what came of its turn; hand-set (docs/tuning.md)
    turn_reach: int = bounded(60, 0, 1000)
    # learn the user's words from their sessions: recall dev, bench.recall_adapt (docs/tuning.md)
    adapt: bool = True
    adapt_fit: AdaptConfig = field(default_factory=AdaptConfig)
    # off a part's rerank score: recall dev, bench.recall_quality (docs/tuning.md)
    part_penalty: float = bounded(0.05, 0.0, 1.0)
    # parts in the vector lane too: recall dev, bench.recall_quality (docs/tuning.md)
    part_vector: bool = False
    # a call hit shows its answering part's lines: recall dev A+B, bench.recall_ablate (docs/tuning.md)
    part_lines: bool = True
    # the most of a call hit's excerpt its part's lines take: set B dev, scratch probe (docs/tuning.md)
    part_share: float = bounded(0.5, 0.1, 0.9)
    # a shown call's part from "candidates" or all the "call"'s: sets A+B dev, recall_ablate (docs/tuning.md)
    part_from: str = "candidates"
    # its lines by query "words" or term "weight" (idf): sets A+B dev, recall_ablate (docs/tuning.md)
    part_lines_by: str = "weight"
    # the part's vector cosine in its choice ("call"): sets A+B dev, scratch harness (docs/tuning.md)
    part_cosine: float = bounded(0.0, 0.0, 1.0)
    # a budget's unused tokens to the cut excerpts, best-ranked first: sets A+B dev (docs/tuning.md)
    budget_fill: str = "best"
    # the chunk of the role asked for: recall dev, bench.recall_quality (docs/tuning.md)
    turn_roles: TurnRoleConfig = field(default_factory=TurnRoleConfig)

    def __post_init__(self) -> None:
        check_bounds(self, "recall")
        for folder in self.folders:
            # read by the engine that runs, wherever it was started: never relative
            if not folder.strip() or not Path(folder).expanduser().is_absolute():
                raise ConfigError(f"recall.folders: {folder!r} is not an absolute path",
                                  key="recall.folders")
        if self.hit_unit not in ("turn", "chunk"):
            raise ConfigError("recall.hit_unit must be 'turn' or 'chunk'", key="recall.hit_unit")
        if self.part_from not in ("candidates", "call"):
            raise ConfigError("recall.part_from must be 'candidates' or 'call'",
                              key="recall.part_from")
        if self.budget_fill not in BUDGET_FILLS:
            raise ConfigError("recall.budget_fill must be 'none', 'best' or 'even'",
                              key="recall.budget_fill")
        if self.part_lines_by not in ("words", "weight"):
            raise ConfigError("recall.part_lines_by must be 'words' or 'weight'",
                              key="recall.part_lines_by")
