"""The retrieval part's config sections: [search] (lane depths, fusion, the lanes' bounds),
[query] (query analysis), [rerank] (the answer-focused rerank) and [tiers] (which
surrogate tier a source gets). Each constant's origin is one line; figures in
docs/tuning.md."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config_base import bounded, check_bounds, check_values
from engine.errors import ConfigError
from engine.limits import LIMITS
from engine.retrieval.lexicon import (
    CALL_ASKS,
    CLASS_PATTERNS,
    DEFAULT_ANSWER_CUES,
    DEFAULT_ANSWER_PATTERNS,
    FILE_EXTENSIONS,
    LANE_WEIGHTS,
    NON_ENTITIES,
    OUTPUT_ASKS,
    QUERY_INTENT_PATTERNS,
    RECENT_PATTERNS,
    START_WORDS,
    STOPWORDS,
    asks_shown,
    named_tools,
    words_of,
)
from engine.retrieval.profiles import DEFAULT_PROFILES, FEATURES, KIND_PROFILES

INTENTS = ("location", "date", "ownership", "multi_hop", "count", "reason", "preference")
QCLASSES = ("factual", "semantic", "temporal", "exploratory")
LANES = ("keyword", "vector", "recency", "live")


@dataclass(frozen=True)
class SearchConfig:
    """Lane depths and fusion for search and build_context. Each constant's origin is
    one line here, its figures in docs/tuning.md (the rerank's per-kind weights are in
    ``engine.retrieval.profiles``, fitted by ``bench/fit_rank.py``)."""

    rrf_k: int = bounded(60, 1, 1000)  # Cormack et al. 2009, not tuned (docs/tuning.md)
    # LoCoMo dev, bench.locomo with CTX__SEARCH__LANE_DEPTH (docs/tuning.md)
    lane_depth: int = bounded(50, 1, 1000)
    # SciFact train + LoCoMo dev, CTX__SEARCH__DEDUPE_THRESHOLD (docs/tuning.md)
    dedupe_threshold: float = bounded(0.9, 0.5, 1.0)
    recency_depth: int = bounded(30, 0)  # newest chunks in the recency lane (temporal queries)
    max_live_items: int = bounded(LIMITS.max_live_items, 0)  # engine/limits.py, the wire's limits too
    max_live_bytes: int = bounded(LIMITS.max_live_bytes, 0)
    max_query_chars: int = LIMITS.max_query_chars
    cross_encoder_path: str = ""
    # keyword lane bounds in big stores: 100k chunks, bench.keyword_lane (docs/tuning.md)
    keyword_max_df: float = bounded(0.1, 0.0, 1.0, lo_open=True)
    keyword_prune_min_chunks: int = bounded(50_000, 0)
    keyword_row_budget: int = bounded(2000, 1)
    # rows scored past it (newest): 1M store, 60 asked + 200 drawn, bench.keyword_lane (docs/tuning.md)
    keyword_scored_max: int = bounded(20_000, 1)
    # lane alone: its two FTS5 queries at once; 100k chunks, stage_latency --ab (docs/tuning.md)
    keyword_parallel: bool = True
    # more lane hits for distinct_sources=True: SciFact, issue 12 (docs/tuning.md)
    distinct_depth_factor: int = bounded(3, 1, 20)
    # numpy BLAS threads (0: leave alone), once per process: issue 12 (docs/tuning.md)
    blas_threads: int = bounded(1, 0, 256)
    # vector lane beside the keyword lane: bench.stage_latency, issue 12 (docs/tuning.md)
    parallel_lanes: bool = True
    # scan keyword hits while the vector lane runs: bench.stage_latency --ab (docs/tuning.md)
    read_ahead: bool = True

    def __post_init__(self) -> None:
        check_bounds(self, "search")
        if self.cross_encoder_path and not Path(self.cross_encoder_path).expanduser().is_dir():
            # loaded from disk only, never by a hub name (``CrossEncoderReranker``)
            raise ConfigError("search.cross_encoder_path is not a local directory "
                              "(a cross-encoder saved to a folder)",
                              key="search.cross_encoder_path")


TIER_MODES = ("disabled", "age_only", "importance")


@dataclass(frozen=True)
class TierPolicy:
    """Which surrogate tier a source gets ([tiers]).

    ``age_only``: age <= ``recent_days`` -> full, age >= ``old_days`` -> micro, else gist.
    ``importance``: ``importance + query_boost * query_match`` >= ``full`` -> full,
    >= ``gist`` -> gist, else micro.
    """

    # Used in packing mode dense_cached only: hand-set seeds, not measured (docs/tuning.md).
    mode: Literal["disabled", "age_only", "importance"] = "importance"
    recent_days: float = bounded(7.0, 0.0)
    old_days: float = 30.0
    full: float = 0.6
    gist: float = bounded(0.3, 0.0)
    query_boost: float = bounded(0.2, 0.0, 1.0)
    # a source's importance (tiers.importance_score); hand-set (docs/tuning.md)
    saturation: int = bounded(20, 1)
    access_half_life_days: float = bounded(30.0, 0.0, lo_open=True)
    source_half_life_days: float = bounded(90.0, 0.0, lo_open=True)
    access_share: float = bounded(0.7, 0.0, 1.0)  # use's share of importance

    def __post_init__(self) -> None:
        if self.mode not in TIER_MODES:
            raise ConfigError(f"tiers.mode must be one of {TIER_MODES}, got {self.mode!r}",
                              key="tiers.mode")
        check_bounds(self, "tiers")
        if not self.recent_days <= self.old_days:  # also refuses NaN
            raise ConfigError("tiers: need 0 <= recent_days <= old_days", key="tiers.old_days")
        if not self.gist <= self.full:
            raise ConfigError("tiers: need 0 <= gist <= full", key="tiers.full")


@dataclass(frozen=True)
class QueryConfig:
    """Language and policy knobs of query analysis; regexes are compiled once, here."""

    stopwords: frozenset[str] = STOPWORDS
    # Words that are never entities even when capitalized mid-sentence (dates, pronouns).
    non_entities: frozenset[str] = NON_ENTITIES
    # Capitalized sentence-initial words that are never entities (imperatives).
    start_words: frozenset[str] = START_WORDS
    file_extensions: frozenset[str] = FILE_EXTENSIONS
    intent_patterns: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(QUERY_INTENT_PATTERNS))
    recent_patterns: tuple[str, ...] = RECENT_PATTERNS
    class_patterns: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(CLASS_PATTERNS))
    semantic_intents: frozenset[str] = frozenset({"reason", "preference", "multi_hop"})
    factual_intents: frozenset[str] = frozenset({"location", "count", "ownership"})
    # Queries of at most this many terms, with no question form, are "exploratory".
    short_query_terms: int = bounded(2, 0)
    day_first: bool = False  # 03/04/2023 is 4 March when true, 3 April when false
    max_terms: int = bounded(32, 1)
    max_chars: int = bounded(4000, 1)  # only this much of a (pasted, huge) query is analyzed
    lane_weights: Mapping[str, Mapping[str, float]] = field(
        default_factory=lambda: {k: dict(v) for k, v in LANE_WEIGHTS.items()})
    # the recency weight when the query asks for recent things; hand-set (docs/tuning.md)
    recent_recency_weight: float = bounded(1.0, 0.0, 10.0)
    # named speakers left out of lane matching; hand-set (docs/tuning.md)
    speaker_scoped: bool = True
    _compiled: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_bounds(self, "query")
        for name in ("stopwords", "non_entities", "start_words", "file_extensions",
                     "semantic_intents", "factual_intents"):  # accept any iterable of words
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"query.{name}: expected a list of words")
            object.__setattr__(self, name, frozenset(w.lower() for w in value))
        unknown = set(self.intent_patterns) - set(INTENTS)
        if unknown:
            raise ConfigError(f"query.intent_patterns: unknown intents {sorted(unknown)}")
        unknown = set(self.class_patterns) - set(QCLASSES)
        if unknown:
            raise ConfigError(f"query.class_patterns: unknown classes {sorted(unknown)}")
        if set(self.lane_weights) != set(QCLASSES):
            raise ConfigError(f"query.lane_weights: needs exactly the classes {list(QCLASSES)}")
        for qclass, weights in self.lane_weights.items():
            if set(weights) - set(LANES):
                raise ConfigError(f"query.lane_weights.{qclass}: lanes must be among {LANES}")
            check_values(weights, 0.0, 10.0, f"query.lane_weights.{qclass}")
        compiled = {
            "intent": {k: _compile_any(v, f"query.intent_patterns.{k}")
                       for k, v in self.intent_patterns.items()},
            "class": {k: _compile_any(v, f"query.class_patterns.{k}")
                      for k, v in self.class_patterns.items()},
            "recent": _compile_any(self.recent_patterns, "query.recent_patterns"),
        }
        object.__setattr__(self, "_compiled", compiled)


def _compile_any(patterns: tuple[str, ...], key: str) -> re.Pattern[str] | None:
    """One case-insensitive alternation of ``patterns`` (None when empty)."""
    if isinstance(patterns, str):
        raise ConfigError(f"{key}: expected a list of regexes, not one string")
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{key}: invalid regex ({exc.msg})") from None


def _words(*items: str) -> tuple[str, ...]:
    return tuple(w for item in items for w in item.split())


@dataclass(frozen=True)
class TranscriptCues:
    """Words (regex fragments, matched as whole words, case-insensitive) showing what a
    question about a coding session asks for. Origin: how English asks about a failure,
    about an action and about code (closed-class verbs and nouns of a developer's
    vocabulary), written from general usage, not taken from the benchmark's questions."""

    failure: tuple[str, ...] = _words(
        r"fail\w* broke\w* break\w* error\w* wrong crash\w* refus\w* reject\w* complain\w*",
        r"couldn'?t didn'?t wasn'?t won'?t can'?t blow\w* stuck hang\w* bug\w* missing",
        r"panic\w* flaky red")
    command: tuple[str, ...] = _words(
        r"command\w* run ran invocation invok\w* call\w* search\w* list\w* fetch\w*",
        r"launch\w* start\w* grep\w* read pull\w* execut\w* tool\w*")
    code: tuple[str, ...] = (*_words(
        r"snippet\w* code show struct\w* constant\w* pattern\w* regex\w* literal\w*",
        r"signature\w*"), r"look\w*\s+like")
    _compiled: Mapping[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = {name: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
                    for name, words in (("failure", self.failure), ("command", self.command),
                                        ("code", self.code)) if words}
        object.__setattr__(self, "_compiled", compiled)

    def asks(self, query: str) -> dict[str, bool]:
        """Which of failure / command / code the question asks about."""
        return {name: rx.search(query) is not None for name, rx in self._compiled.items()}


@dataclass(frozen=True)
class TurnRoleConfig:
    """The question shapes (regex fragments matched as whole words, case-insensitive)
    and the bonus each role's chunks get. Cues: written from how English asks about an
    outcome, about what a tool printed, about a command and about a cause (general usage, not taken
    from the benchmark's questions). Bonuses are added to a rerank score (a transcript
    chunk's being at most 1). Read by ``engine.retrieval.turn_roles``."""

    ending: tuple[str, ...] = (*_words(
        r"outcome\w* ended eventually finally final conclu\w* verdict"), r"came\s+of",
        r"come\s+of", r"in\s+the\s+end", r"end\s+up", r"ended\s+up", r"at\s+the\s+end",
        r"how\s+did\s+(?:it|that|this|the\s+\w+)\s+(?:end|go|turn\s+out)",
        r"turn(?:ed)?\s+out", r"where\s+did\s+(?:we|i|it)\s+(?:land|leave)")
    # what a run printed, reported, returned: general English (docs/tuning.md)
    output: tuple[str, ...] = OUTPUT_ASKS
    # how it was done, which command, which argument: general English (docs/tuning.md)
    call: tuple[str, ...] = CALL_ASKS
    # why-questions and how a cause is said: general English (docs/tuning.md)
    cause: tuple[str, ...] = (
        *_words(r"why cause\w* reason\w*"), r"how\s+come",
        r"what\s+(?:was|went|is|goes)\s+wrong", r"what\s+(?:broke|made|kept|caused)")
    # no bare "because": recall dev, bench.recall_quality (docs/tuning.md)
    diagnosis: tuple[str, ...] = (
        "culprit", r"root\s+cause", r"caused\s+by", r"that'?s\s+why", r"there\s+it\s+is",
        r"this\s+is\s+(?:a|the)\s+bug",
        (r"the\s+(?:real\s+|root\s+|actual\s+)?(?:issue|problem|cause|bug|reason)"
         r"\s+(?:is|was|here)"),
        r"(?:see|found|spotted)\s+the\s+(?:issue|problem|bug|cause)",
        r"(?:fail\w*|broke|breaks|crash\w*|error\w*|panic\w*|hang\w*)\s+because")
    # Bonuses: recall dev, bench.recall_quality (docs/tuning.md).
    ending_bonus: float = bounded(0.05, 0.0, 1.0)
    # a result or a reply's code, for an output question: CV by session over sets A+B (tuning.md)
    output_bonus: float = bounded(0.05, 0.0, 1.0)
    # a call, for a how/which-command question: CV by session over sets A+B (docs/tuning.md)
    call_bonus: float = bounded(0.1, 0.0, 1.0)
    named_bonus: float = bounded(0.05, 0.0, 1.0)
    # a chunk saying a cause, for a why-question: off, set A's 0.03 failed set B (docs/tuning.md)
    cause_bonus: float = bounded(0.0, 0.0, 1.0)
    # best ranked chunks read for a cause: recall dev, bench.recall_quality (docs/tuning.md)
    cause_reach: int = bounded(60, 1, 10_000)
    # a shell call showing what the question names: recall dev, recall_quality (docs/tuning.md)
    shown_bonus: float = bounded(0.05, 0.0, 1.0)
    # per better chunk with the same opening: off, set A's 0.1 failed set B (docs/tuning.md)
    repeat_penalty: float = bounded(0.0, 0.0, 1.0)
    # per cosine a chunk leans less to the ask than its turn's best: off, set A lost one (tuning.md)
    ask_weight: float = bounded(0.0, 0.0, 1.0)
    # best ranked chunks read for their lean to the ask (ask_weight): as cause_reach (tuning.md)
    ask_reach: int = bounded(60, 1, 10_000)
    _compiled: Mapping[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_bounds(self, "recall.turn_roles")
        compiled = {name: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
                    for name, words in (("ending", self.ending), ("output", self.output),
                                        ("call", self.call), ("cause", self.cause),
                                        ("diagnosis", self.diagnosis)) if words}
        object.__setattr__(self, "_compiled", compiled)

    def asks(self, query: str) -> dict[str, bool]:
        """Which of ending / output / call / cause the question asks about."""
        return {name: rx.search(query) is not None for name, rx in self._compiled.items()
                if name != "diagnosis"}

    def says_cause(self, text: str) -> bool:
        """Whether ``text`` (an assistant's words) says what caused something."""
        rx = self._compiled.get("diagnosis")
        return rx is not None and rx.search(text) is not None

    def wanted(self, query: str, tools: set[str]) -> bool:
        """Whether the question asks for a role that has a bonus (``tools``: the tools
        of the chunks ranked); when not, no chunk's score changes."""
        asks = self.asks(query)
        return bool((asks.get("ending") and self.ending_bonus)
                    or (asks.get("output") and self.output_bonus)
                    or (asks.get("call") and self.call_bonus)
                    or (asks.get("cause") and self.cause_bonus)
                    or (self.shown_bonus and asks_shown(query))
                    or (self.named_bonus and named_tools(query, tools)))

    @property
    def on(self) -> bool:
        return any((self.ending_bonus, self.output_bonus, self.call_bonus, self.named_bonus,
                    self.cause_bonus, self.shown_bonus))


@dataclass(frozen=True)
class RerankConfig:
    """The rerank's window, per-kind feature weights (``profiles``) and answer patterns.

    Weights come from ``engine.retrieval.profiles`` (fitted on training splits, with
    their origin recorded there). ``kind_profiles`` maps a source kind to a profile;
    kinds it does not name use ``default_profile``.
    """

    window: int = bounded(100, 1)
    # the window for distinct sources: SciFact train, bench.fit_window (docs/tuning.md)
    distinct_window: int = bounded(200, 1)
    profiles: Mapping[str, Mapping[str, float]] = field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_PROFILES.items()})
    kind_profiles: Mapping[str, str] = field(default_factory=lambda: dict(KIND_PROFILES))
    default_profile: str = "document"
    fused_norm: str = "max"  # "max": f / max(f); "minmax": (f - min) / (max - min)
    # kinds read with their neighbours: LoCoMo dev, bench.fit_context (docs/tuning.md)
    context_kinds: tuple[str, ...] = ("turn",)
    # LoCoMo dev, bench.fit_context, bench/data/context_fit.json (docs/tuning.md).
    context_share: float = bounded(0.3, 0.0, 1.0)
    date_window_days: float = bounded(3.0, 0.0)  # this many days off the asked date scores 0
    scan_chars: int = bounded(2000, 1)  # only the first chars of a long candidate are scanned
    entity_fields: tuple[str, ...] = ("speaker", "title", "heading", "source", "path")
    stopwords: frozenset[str] = STOPWORDS
    transcript_cues: TranscriptCues = field(default_factory=TranscriptCues)
    # sessions whose chunks join the window: recall dev, recall_quality (docs/tuning.md)
    session_expand: int = bounded(3, 0, 10)
    session_expand_chunks: int = bounded(400, 0, 5000)  # the first session's, at most
    # choice of sessions, later ones' chunks: recall dev, scratch sweep (docs/tuning.md)
    session_expand_by: str = "rerank"
    session_expand_others: int = bounded(20, 0, 5000)
    # later sessions' best-worded chunks: off, set A's 5 failed set B (docs/tuning.md)
    session_expand_words: int = bounded(0, 0, 5000)
    # the session lane (0: off): recall dev, scratch sweep (docs/tuning.md)
    session_expand_lane: int = bounded(0, 0, 10)
    session_lane_min: float = bounded(0.3, 0.0, 1.0)
    # the asking project's weight in a fused choice: recall dev, recall_quality (docs/tuning.md)
    project_expand: float = bounded(1.0, 1.0, 100.0)
    # a session's own words (expand 0: off): recall dev, recall_quality (docs/tuning.md)
    session_words_max_share: float = bounded(0.02, 0.0, 1.0, lo_open=True)
    session_words_expand: float = bounded(0.0, 0.0, 100.0)
    # feedback from the first hits (0: off): recall dev, failed set B (docs/tuning.md)
    feedback: float = bounded(0.0, 0.0, 5.0)
    feedback_chunks: int = bounded(5, 1, 100)
    feedback_from: str = "chunks"
    feedback_use: str = "final"
    # the first hits' words as a keyword lane (0: off): recall dev sweep (docs/tuning.md)
    feedback_terms: int = bounded(0, 0, 50)
    feedback_terms_weight: float = bounded(0.5, 0.0, 10.0)
    intent_cues: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_ANSWER_CUES))
    intent_patterns: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_ANSWER_PATTERNS))
    _compiled: dict[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)
    _cue_words: dict[str, frozenset[str]] = field(init=False, repr=False, compare=False)
    _cue_phrases: dict[str, dict[str, tuple[str, ...]]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.stopwords, str) or isinstance(self.entity_fields, str):
            raise ConfigError("rerank.stopwords and entity_fields must be lists")
        object.__setattr__(self, "stopwords", frozenset(w.lower() for w in self.stopwords))
        object.__setattr__(self, "entity_fields", tuple(self.entity_fields))
        check_bounds(self, "rerank")
        profiles: dict[str, dict[str, float]] = {}
        for name, weights in self.profiles.items():
            if not isinstance(weights, Mapping):
                raise ConfigError(f"rerank.profiles.{name}: expected feature = weight pairs")
            unknown = set(weights) - set(FEATURES)
            if unknown:
                raise ConfigError(f"rerank.profiles.{name}: unknown features {sorted(unknown)}"
                                  f"; expected among {FEATURES}")
            check_values(weights, -10.0, 10.0, f"rerank.profiles.{name}")
            profiles[name] = {f: float(w) for f, w in weights.items() if w}
        object.__setattr__(self, "profiles", profiles)
        if self.default_profile not in profiles or \
                set(self.kind_profiles.values()) - set(profiles):
            raise ConfigError("rerank: default_profile and kind_profiles must name profiles "
                              f"among {sorted(profiles)}")
        if self.session_expand_by not in ("fused", "rerank"):
            raise ConfigError("rerank.session_expand_by must be 'fused' or 'rerank'",
                              key="rerank.session_expand_by")
        if self.feedback_from not in ("chunks", "session"):
            raise ConfigError("rerank.feedback_from must be 'chunks' or 'session'",
                              key="rerank.feedback_from")
        if self.feedback_use not in ("final", "expand", "both"):
            raise ConfigError("rerank.feedback_use must be 'final', 'expand' or 'both'",
                              key="rerank.feedback_use")
        if self.fused_norm not in ("max", "minmax"):
            raise ConfigError("rerank.fused_norm must be 'max' or 'minmax'")
        if isinstance(self.context_kinds, str):
            raise ConfigError("rerank.context_kinds must be a list of chunk kinds")
        object.__setattr__(self, "context_kinds", tuple(self.context_kinds))
        if (set(self.intent_patterns) | set(self.intent_cues)) - set(INTENTS):
            raise ConfigError(f"rerank.intent_*: intents must be among {INTENTS}")
        words: dict[str, frozenset[str]] = {}
        phrases: dict[str, dict[str, tuple[str, ...]]] = {}  # intent -> first word -> phrases
        for intent, cues in self.intent_cues.items():
            if isinstance(cues, str):
                raise ConfigError(f"rerank.intent_cues.{intent}: expected a list of strings")
            tokenized = [words_of(c) for c in cues]
            words[intent] = frozenset(t[0] for t in tokenized if len(t) == 1)
            by_first: dict[str, tuple[str, ...]] = {}
            for t in tokenized:
                if len(t) > 1:
                    by_first[t[0]] = (*by_first.get(t[0], ()), " " + " ".join(t) + " ")
            phrases[intent] = by_first
        object.__setattr__(self, "_cue_words", words)
        object.__setattr__(self, "_cue_phrases", phrases)
        compiled: dict[str, re.Pattern[str]] = {}
        for intent, patterns in self.intent_patterns.items():
            if isinstance(patterns, str):
                raise ConfigError(f"rerank.intent_patterns.{intent}: expected a list of regexes")
            if patterns:
                try:
                    compiled[intent] = re.compile("|".join(f"(?:{p})" for p in patterns))
                except re.error as exc:
                    raise ConfigError(
                        f"rerank.intent_patterns.{intent}: invalid regex ({exc.msg})") from None
        object.__setattr__(self, "_compiled", compiled)

    def weights_of(self, profile: str | None) -> Mapping[str, float]:
        """The feature weights of ``profile`` (a candidate's; None or one not known: the
        default profile's)."""
        return self.profiles.get(profile or self.default_profile,
                                 self.profiles[self.default_profile])


@dataclass(frozen=True)
class CrossEncoderConfig:
    """A local cross-encoder (``search.cross_encoder_path``): ``model_path`` must be a
    directory on disk (never a hub name)."""

    model_path: str
    weight: float = bounded(0.5, 0.0, 1.0)  # share of the cross-encoder in the blended score
    window: int = bounded(20, 1)  # only the top this many of the rule ranking are re-scored
    batch_size: int = bounded(32, 1)
    max_length: int = bounded(256, 8)
    device: str | None = None

    def __post_init__(self) -> None:
        check_bounds(self, "cross_encoder")


@dataclass(frozen=True)
class AdaptConfig:
    """Hyperparameters of the learned reader ([recall.adapt_fit], read by
    ``engine.retrieval.adapt_fit``). Figures: recall dev, ``python -m bench.recall_adapt
    --split dev --latency-chunks 50000`` (2026-11-28, 119 questions; docs/tuning.md)."""

    use_map: bool = True  # the query map: dev hit@5 0.529 -> 0.555 (docs/tuning.md)
    use_terms: bool = False  # the term lane: no gain on dev (docs/tuning.md)
    # The map as a lane beside the vector lane (share of its weight): off, dev (docs/tuning.md).
    map_lane: float = bounded(0.0, 0.0, 10.0)
    temperature: float = bounded(0.05, 0.001, 1.0)  # InfoNCE; hand-set, the usual value
    # Weight of ||W - I||^2 (the pull toward identity): best MRR on dev (docs/tuning.md).
    identity_weight: float = bounded(0.01, 0.0, 100.0)
    # Adam step size and steps. Hand-set: the in-sample loss levels off by 150 steps.
    learning_rate: float = bounded(0.002, 0.0, 1.0, lo_open=True)
    steps: int = bounded(200, 0, 100_000)
    batch: int = bounded(256, 2, 8192)  # pairs per step (in-batch negatives: 255 each)
    # Fewer pairs than this: nothing is fitted (too little to learn from). Hand-set.
    min_pairs: int = bounded(200, 2, 10**7)
    # sessions held out; a map not beating identity there is unused. Hand-set (docs/tuning.md)
    holdout: float = bounded(0.1, 0.0, 0.9, hi_open=True)
    # query-side texts per session and their tokens: dev, bench.recall_adapt (docs/tuning.md)
    texts_per_session: int = bounded(4, 1, 1000)
    text_tokens: int = bounded(48, 8, 512)
    # Words each query word may add to the term lane, and in all. Hand-set.
    terms_per_word: int = bounded(2, 0, 50)
    terms_max: int = bounded(6, 0, 100)
    # A translation needs this many co-occurrences and this normalized PMI. Hand-set.
    terms_min_count: int = bounded(3, 1, 10**6)
    terms_min_npmi: float = bounded(0.2, -1.0, 1.0)
    # the term lane's share of the keyword lane's weight: dev, recall_adapt (docs/tuning.md)
    terms_weight: float = bounded(0.3, 0.0, 10.0)
    # pair growth that triggers a refit (0: every sync). Hand-set (docs/tuning.md)
    refit_growth: float = bounded(0.25, 0.0, 100.0)

    def __post_init__(self) -> None:
        check_bounds(self, "recall.adapt_fit")
