"""The packing config section ([packing]): how ``pack`` spends a budget.

Each constant's origin is one line here; the figures are in docs/tuning.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.config_base import bounded, check_bounds, check_values
from engine.errors import ConfigError
from engine.limits import LIMITS
from engine.packing.render import FORMATS

MODES = ("fast", "dense_cached")


@dataclass(frozen=True)
class PackingConfig:
    """How ``pack`` spends a budget; defaults live here, the global config wires them."""

    mode: str = "fast"  # "fast" | "dense_cached" (surrogates replace raw snippets)
    expansion_max_tokens: int = bounded(400, 1, LIMITS.max_budget)  # cap on an expanded top hit
    expand_top: int = bounded(1, 0, 100)  # how many top memory hits are expanded
    min_snippet_tokens: int = bounded(24, 1, LIMITS.max_budget)  # cut only if this much fits
    max_item_tokens: int = bounded(600, 1, LIMITS.max_budget)  # cap on any other item's body
    live_max_share: float = bounded(0.5, 0.0, 1.0, lo_open=True)  # live items' budget share
    # Live items and conversation turns beside memory: hand-set seeds (docs/tuning.md).
    live_term_weight: float = bounded(0.6, 0.0, 10.0)
    live_priors: Mapping[str, float] = field(default_factory=lambda: {
        "selection": 0.35, "active_file": 0.3, "terminal": 0.2, "clipboard": 0.2,
        "browser_tab": 0.15, "window": 0.05, "other": 0.05})
    turn_recency_weight: float = bounded(0.3, 0.0, 10.0)
    turn_term_weight: float = bounded(0.4, 0.0, 10.0)
    include_time: bool = True  # dates in item headers
    fmt: str = "text"  # "text" | "markdown" | "json"
    # chunk kinds whose neighbours join the candidates; hand-set (docs/tuning.md)
    neighbour_kinds: tuple[str, ...] = ("turn",)
    neighbour_hits: int = bounded(30, 0, 1000)  # hand-set seed (docs/tuning.md)
    neighbour_span: int = bounded(3, 0, 50)  # hand-set seed (docs/tuning.md)
    # These five: LoCoMo dev, bench.fit_pack, bench/data/pack_fit.json (docs/tuning.md).
    neighbour_after: float = bounded(0.9, 0.0, 1.0)
    neighbour_before: float = bounded(0.9, 0.0, 1.0)
    speaker_other: float = bounded(0.85, 0.0, 1.0)  # a turn by a speaker the query doesn't name
    speaker_other_neighbour: float = bounded(0.7, 0.0, 1.0)  # its neighbour
    question_turn: float = bounded(0.95, 0.0, 1.0)  # a turn that asks ("?")
    # Kinds packed whole or not at all: LoCoMo dev replay (docs/tuning.md).
    whole_kinds: tuple[str, ...] = ("turn",)
    # kinds rendered without a kind label: LoCoMo dev, bench.fit_context (docs/tuning.md)
    unlabelled_kinds: tuple[str, ...] = ("turn",)

    def __post_init__(self) -> None:
        check_bounds(self, "packing")
        check_values(self.live_priors, 0.0, 10.0, "packing.live_priors")
        object.__setattr__(self, "live_priors", dict(self.live_priors))
        if self.mode not in MODES:
            raise ConfigError("packing.mode must be one of " + ", ".join(MODES))
        if self.fmt not in FORMATS:
            raise ConfigError("packing.fmt must be one of " + ", ".join(FORMATS))
        if not isinstance(self.include_time, bool):
            raise ConfigError("packing.include_time must be a boolean")
        for name in ("neighbour_kinds", "whole_kinds", "unlabelled_kinds"):
            if isinstance(getattr(self, name), str):
                raise ConfigError(f"packing.{name} must be a list of chunk kinds")
            object.__setattr__(self, name, tuple(getattr(self, name)))
