"""Fit ranked candidates into an exact token budget and render them.

Allocation order (what gets budget first):

1. the top ``expand_top`` memory hits by score, as their ``expanded`` text (the
   hit with its neighbours) capped at ``expansion_max_tokens``, or as their
   plain text when the caller gave none;
2. in ``dense_cached`` mode, memory candidates that carry a ``surrogate``,
   which replaces their raw text;
3. the other memory snippets by score;
4. live items and conversation turns by score. Live items are guaranteed a
   reservation of up to ``live_max_share`` of the budget (memory is packed
   around it) and, while memory competes, never take more than that share;
5. memory items that did not fit before the live items are retried in what is
   left.

An item that does not fit whole is cut at a token boundary when at least
``min_snippet_tokens`` of its body fit, else skipped (a later, smaller item may
still fit); items of ``whole_kinds`` (chat turns) are never cut, only skipped. Nothing is packed twice: same key, a chunk set already covered (a
snippet inside an expanded top hit), or the same text.

A text longer than its cap is cut where the reader needs it: an expanded block
around the hit it was expanded from, a snippet around the first query term
(marked ``… `` at the start and `` …`` at the end).

Memory items that share a header (same source, kind, title and time) are
rendered as one run under that header, in their order in the source (see
``render``); the header is paid once, by the first item placed in the run.

Token accounting is exact: ``item.tokens`` is the count of the item's rendered
block including the separator that follows it (for the last item, the
format's closing separator) and, for the first item of a run, the run's
header; the rest of ``total_tokens`` is the head, the group headers and the
foot of the format (see ``render``), so
``total_tokens == sum(item.tokens) + overhead == counter.count(context)``.
``item.why`` is the packer's reason (``top_hit_expanded``, ``top_hit``,
``surrogate``, ``snippet``, ``live``, ``conversation``), then ``|cut`` when the
text was cut, then ``|`` and the caller's own reason if any.

This module holds the configuration and the allocation; ``pieces`` prepares each
item (header, body cut to its cap, cost) and ``assemble`` renders the placed items
into the payload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.api import Payload
from engine.errors import ConfigError, InvalidBudget
from engine.limits import MAX_BUDGET
from engine.packing.assemble import Assembler
from engine.packing.candidates import PackCandidate
from engine.packing.pieces import Piece, PieceMaker
from engine.packing.render import FORMATS, GROUP_ORDER, Renderer, format_time, get_renderer
from engine.tokens import TokenCounter

MODES = ("fast", "dense_cached")

_PLACED, _DUPLICATE, _NO_FIT = 0, 1, 2


@dataclass(frozen=True)
class PackingConfig:
    """How ``pack`` spends a budget; defaults live here, the global config wires them."""

    mode: str = "fast"  # "fast" | "dense_cached" (surrogates replace raw snippets)
    expansion_max_tokens: int = 400  # cap on an expanded top hit's body
    expand_top: int = 1  # how many top memory hits are expanded
    min_snippet_tokens: int = 24  # an item is cut only if this much of its body fits
    max_item_tokens: int = 600  # cap on any other item's body
    live_max_share: float = 0.5  # share of the budget live items may take beside memory
    # How the caller's live items and conversation turns score beside memory (whose
    # best hit scores 1): a live item live_term_weight x the share of the query's terms
    # it holds, plus a prior by its kind (live_priors, "other" for kinds not named); a
    # turn turn_recency_weight x its place (1 for the last turn) plus turn_term_weight
    # x that share. Seed values, hand-set, not fitted: no benchmark here holds live
    # items or a caller's conversation (LoCoMo's turns are stored memory), so none
    # could choose them; they are kept here to be set, not as measured values.
    live_term_weight: float = 0.6
    live_priors: Mapping[str, float] = field(default_factory=lambda: {
        "selection": 0.35, "active_file": 0.3, "terminal": 0.2, "clipboard": 0.2,
        "browser_tab": 0.15, "window": 0.05, "other": 0.05})
    turn_recency_weight: float = 0.3
    turn_term_weight: float = 0.4
    include_time: bool = True  # dates in item headers
    fmt: str = "text"  # "text" | "markdown" | "json"
    # Short, self-contained chunks (chat turns) whose neighbours in their source join
    # the candidates as items of their own: an answer often sits in the reply to the
    # turn that matched, or just before it. A neighbour d steps after (before) a hit
    # scores the hit's score times neighbour_after**d (neighbour_before**d), up to
    # neighbour_span steps, for the best neighbour_hits hits. Such hits are not
    # expanded into one block: their neighbours compete for the budget one by one.
    neighbour_kinds: tuple[str, ...] = ("turn",)
    neighbour_hits: int = 30
    neighbour_span: int = 3
    neighbour_after: float = 0.9
    # neighbour_after/before and the three factors below: chosen on LoCoMo dev
    # (conversations 0-4, 759 questions; test never used) by ``python -m bench.fit_pack
    # --store-cache DIR`` (bench/data/pack_fit.json): it replays scoring and packing over
    # each question's ranked turns and maximizes the mean evidence recall in the payload
    # at 500/1000/2000 tokens. neighbour_before was 0.8 (seed value). Turns are weighed
    # by who spoke them (engine.packing.turns): when the query names a speaker, a
    # matching turn by another speaker scores speaker_other times its score, a
    # neighbouring one speaker_other_neighbour times; a turn that asks ("?")
    # question_turn times. `python -m bench.locomo --split dev`: ctx@500/1000/2000
    # 0.786/0.851/0.895 -> 0.816/0.864/0.915, recall@10 unchanged (0.772). Fitted on
    # conversations 0-2 alone, the factors moved 3-4 from 0.758/0.828/0.875 to
    # 0.782/0.830/0.901 (replay).
    neighbour_before: float = 0.9
    speaker_other: float = 0.85
    speaker_other_neighbour: float = 0.7
    question_turn: float = 0.95
    # Items of these chunk kinds are packed whole or not at all (a chat turn cut in
    # the middle spends the end of the budget on half a statement; a whole later
    # turn may still fit). LoCoMo dev, replayed as bench.fit_pack does: +0.002 at 1000
    # tokens against cutting (one exploratory replay, not in pack_fit.json).
    whole_kinds: tuple[str, ...] = ("turn",)
    # Memory items of these chunk kinds are rendered under a run header without the
    # kind label ("[2024-03-02 09:00 UTC] session 1", not "[turn · 2024-03-02 ...]"):
    # a chat turn's "Speaker: text" line already says what it is, and a session's
    # header is paid once per session in the payload (3 of its ~20 tokens here).
    # LoCoMo dev (test never used), ``python -m bench.fit_context`` (last row of
    # bench/data/context_fit.json, 2026-11-23), with rerank.context_share 0.3:
    # ctx@500/1000/2000 0.816/0.872/0.916 -> 0.816/0.875/0.916. Not a fitted value:
    # a saving that only frees budget.
    unlabelled_kinds: tuple[str, ...] = ("turn",)

    def __post_init__(self) -> None:
        weights = (self.live_term_weight, self.turn_recency_weight, self.turn_term_weight,
                   *self.live_priors.values())
        if not all(0.0 <= w <= 10.0 for w in weights):
            raise ConfigError("packing: live_term_weight, turn_recency_weight, "
                              "turn_term_weight and live_priors must be in [0, 10]")
        object.__setattr__(self, "live_priors", dict(self.live_priors))
        if self.mode not in MODES:
            raise ConfigError("packing.mode must be one of " + ", ".join(MODES))
        if self.fmt not in FORMATS:
            raise ConfigError("packing.fmt must be one of " + ", ".join(FORMATS))
        for name in ("expansion_max_tokens", "min_snippet_tokens", "max_item_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_BUDGET:
                raise ConfigError(f"packing.{name} must be an integer in 1..{MAX_BUDGET}")
        if not isinstance(self.expand_top, int) or not 0 <= self.expand_top <= 100:
            raise ConfigError("packing.expand_top must be an integer in 0..100")
        share = self.live_max_share
        if not isinstance(share, int | float) or not 0.0 < share <= 1.0:
            raise ConfigError("packing.live_max_share must be in (0, 1]")
        if not isinstance(self.include_time, bool):
            raise ConfigError("packing.include_time must be a boolean")
        if isinstance(self.neighbour_kinds, str):
            raise ConfigError("packing.neighbour_kinds must be a list of chunk kinds")
        object.__setattr__(self, "neighbour_kinds", tuple(self.neighbour_kinds))
        if not 0 <= self.neighbour_hits <= 1000 or not 0 <= self.neighbour_span <= 50:
            raise ConfigError("packing.neighbour_hits must be in 0..1000 and "
                              "neighbour_span in 0..50")
        if not (0.0 <= self.neighbour_after <= 1.0 and 0.0 <= self.neighbour_before <= 1.0):
            raise ConfigError("packing.neighbour_after and neighbour_before must be in [0, 1]")
        for name in ("speaker_other", "speaker_other_neighbour", "question_turn"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigError(f"packing.{name} must be in [0, 1]")
        for name in ("whole_kinds", "unlabelled_kinds"):
            if isinstance(getattr(self, name), str):
                raise ConfigError(f"packing.{name} must be a list of chunk kinds")
            object.__setattr__(self, name, tuple(getattr(self, name)))


def _rank_key(score: float) -> float:
    return math.inf if math.isnan(score) else -score  # NaN ranks last


def _check_budget(budget: int) -> None:
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise InvalidBudget("budget must be an integer")
    if budget < 0 or budget > MAX_BUDGET:
        raise InvalidBudget(f"budget must be in 0..{MAX_BUDGET}", budget=budget)


def pack(
    candidates: Sequence[PackCandidate], budget: int, cfg: PackingConfig,
    counter: TokenCounter, *, now: float | None = None, query: str | None = None,
) -> Payload:
    """Choose, cut and render candidates into a context of at most ``budget`` tokens.

    ``now`` (epoch seconds), when given with ``include_time``, opens the context
    with the current date so the model can judge the age of dated items.
    ``query`` keeps its terms in view when a long text must be cut. Timings are
    left empty for the caller. Raises InvalidBudget for a budget outside
    0..MAX_BUDGET; a budget too small for any item gives an empty payload.
    """
    _check_budget(budget)
    if budget == 0 or not candidates:
        return Payload("", 0, budget, (), {}, cfg.fmt)
    return _Packer(candidates, budget, cfg, counter, now, query).run()


class _Packer:
    def __init__(
        self, candidates: Sequence[PackCandidate], budget: int, cfg: PackingConfig,
        counter: TokenCounter, now: float | None, query: str | None,
    ) -> None:
        self.budget, self.cfg, self.counter = budget, cfg, counter
        self.r: Renderer = get_renderer(cfg.fmt)
        stamp = format_time(now) if cfg.include_time else ""
        self.head, self.foot = self.r.head(stamp), self.r.foot()
        self.frame_cost = counter.count(self.head) + counter.count(self.foot)
        self.group_cost = {s: counter.count(self.r.group(s)) for s in GROUP_ORDER}
        self.pieces = PieceMaker(self.r, counter, include_time=cfg.include_time, query=query,
                                 unlabelled_kinds=cfg.unlabelled_kinds)
        self.used = 0
        self.live_used = 0
        self.open_groups: set[str] = set()
        self.open_runs: set[tuple[object, ...]] = set()
        self.keys: set[str] = set()
        self.covered: set[int] = set()
        self.bodies: set[tuple[str, str]] = set()
        self.placed: list[Piece] = []
        self._split(candidates)

    def _split(self, candidates: Sequence[PackCandidate]) -> None:
        order = sorted(range(len(candidates)),
                       key=lambda i: (_rank_key(candidates[i].score), candidates[i].key, i))
        cfg = self.cfg
        self.first: list[Piece] = []
        self.surrogates: list[Piece] = []
        self.snippets: list[Piece] = []
        self.others: list[Piece] = []
        n_memory = 0
        for rank, i in enumerate(order):
            c = candidates[i]
            if c.section == "memory":
                if n_memory < cfg.expand_top:
                    if c.expanded:
                        self.first.append(Piece(c, i, rank, "top_hit_expanded", c.expanded,
                                                cfg.expansion_max_tokens, c.kind, anchor=c.text))
                    else:
                        self.first.append(Piece(c, i, rank, "top_hit", c.text,
                                                cfg.max_item_tokens, c.kind,
                                                raw_tokens=c.text_tokens))
                elif cfg.mode == "dense_cached" and c.surrogate:
                    label = f"summary:{c.tier}" if c.tier else "summary"
                    self.surrogates.append(
                        Piece(c, i, rank, "surrogate", c.surrogate, cfg.max_item_tokens, label))
                else:
                    self.snippets.append(
                        Piece(c, i, rank, "snippet", c.text, cfg.max_item_tokens, c.kind,
                              raw_tokens=c.text_tokens))
                n_memory += 1
            elif c.section == "live":
                label = c.kind if c.kind.startswith("live:") else f"live:{c.kind}"
                self.others.append(Piece(c, i, rank, "live", c.text, cfg.max_item_tokens, label))
            else:
                self.others.append(Piece(c, i, rank, "conversation", c.text, cfg.max_item_tokens,
                                         "conversation"))
        has_memory = n_memory > 0
        self.live_cap = math.floor(cfg.live_max_share * self.budget) if has_memory else self.budget

    # -- placing -------------------------------------------------------------

    def _try(self, p: Piece, limit: int) -> int:
        c = p.cand
        if c.key in self.keys:
            return _DUPLICATE
        if c.chunk_ids and self.covered.issuperset(c.chunk_ids):
            return _DUPLICATE
        section = c.section
        overhead = 0 if self.placed else self.frame_cost
        new_group = section not in self.open_groups
        if new_group:
            overhead += self.group_cost[section]
        if limit - self.used - overhead <= 0:
            return _NO_FIT
        if p.view is None and self._too_long(p, limit - self.used - overhead):
            return _NO_FIT  # too long even with a free header: skip working the header out
        self.pieces.prepare_head(p)
        if p.run not in self.open_runs:
            overhead += p.run_cost
        room = limit - self.used - overhead
        if section == "live":
            opening = self.group_cost["live"] if new_group else 0
            room = min(room, self.live_cap - self.live_used - opening)
        if room <= 0:
            return _NO_FIT
        if not p.ready and self._too_long(p, room - p.head_cost):
            return _NO_FIT
        self.pieces.prepare(p)
        if not p.body:
            return _DUPLICATE
        if (section, p.body) in self.bodies:
            return _DUPLICATE
        if p.cost <= room:
            self._place(p, p.body, p.cost, overhead)
            return _PLACED
        return self._try_cut(p, room, overhead)

    def _too_long(self, p: Piece, body_room: int) -> bool:
        """Cheap probe for a nearly full budget: when no cut is possible any more,
        an item whose text already starts with more than ``body_room`` tokens is
        skipped without being prepared. A text whose count the candidate gives
        (a stored chunk's) is judged by it, with no tokenizing: once the budget is
        nearly full every remaining candidate is probed, and those probes were most
        of the packer's time (63 of its 100 counts a call at 100k chunks, issue 12).
        This only saves time; the invariants are proven on the final string
        whatever it decides."""
        if body_room <= 0:
            return True
        if body_room >= self.cfg.min_snippet_tokens or body_room >= p.cap:
            return False
        if p.raw_tokens is not None:
            return p.raw_tokens > body_room + 2
        probe = p.raw[: (body_room + 1) * 8]
        return len(probe) < len(p.raw) and self.counter.count(probe) > body_room + 2

    def _try_cut(self, p: Piece, room: int, overhead: int) -> int:
        assert p.view is not None
        if p.cand.kind in self.cfg.whole_kinds:
            return _NO_FIT
        count, sep = self.counter.count, self.r.sep
        allowance = room - p.head_cost
        for _ in range(8):
            if allowance < self.cfg.min_snippet_tokens:
                return _NO_FIT
            body = self.pieces.cut(p.body, allowance)
            if not body:
                return _NO_FIT
            tokens = count(self.pieces.item(p, body) + sep)
            if tokens <= room:
                self._place(p, body, tokens, overhead)
                return _PLACED
            # Shrink in proportion to how much the rendered body overshot.
            used_by_body = max(tokens - p.head_cost, 1)
            allowance = min(allowance - 1, allowance * (room - p.head_cost) // used_by_body)
        return _NO_FIT

    def _place(self, p: Piece, body: str, tokens: int, overhead: int) -> None:
        c = p.cand
        p.placed, p.tokens = body, tokens
        self.placed.append(p)
        self.used += tokens + overhead
        if c.section == "live":
            opening = c.section not in self.open_groups
            self.live_used += tokens + (self.group_cost["live"] if opening else 0)
        self.open_groups.add(c.section)
        self.open_runs.add(p.run)
        self.keys.add(c.key)
        self.covered.update(c.chunk_ids)
        self.bodies.add((c.section, p.body))

    # -- the run ---------------------------------------------------------------

    def run(self) -> Payload:
        live = [p for p in self.others if p.cand.section == "live"]
        reserve = 0
        if live and (self.first or self.surrogates or self.snippets):
            for p in live:
                self.pieces.prepare(p)
            demand = self.group_cost["live"] + sum(max(p.cost, 0) for p in live)
            reserve = min(self.live_cap, demand)
        left_over: list[Piece] = []
        for p in (*self.first, *self.surrogates, *self.snippets):
            if self._try(p, self.budget - reserve) == _NO_FIT:
                left_over.append(p)
        for p in self.others:
            self._try(p, self.budget)
        for p in left_over:
            self._try(p, self.budget)
        return Assembler(self.pieces, self.head, self.foot, self.group_cost, self.budget,
                         self.cfg.fmt).finish(self.placed)
