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
from collections.abc import Sequence

from engine.api import Payload
from engine.errors import InvalidBudget
from engine.limits import LIMITS
from engine.packing.assemble import Assembler
from engine.packing.candidates import PackCandidate
from engine.packing.config import PackingConfig
from engine.packing.pieces import Piece, PieceMaker
from engine.packing.render import GROUP_ORDER, Renderer, format_time, get_renderer
from engine.tokens import TokenCounter

_PLACED, _DUPLICATE, _NO_FIT = 0, 1, 2


def _rank_key(score: float) -> float:
    return math.inf if math.isnan(score) else -score  # NaN ranks last


def _check_budget(budget: int) -> None:
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise InvalidBudget("budget must be an integer")
    if budget < 0 or budget > LIMITS.max_budget:
        raise InvalidBudget(f"budget must be in 0..{LIMITS.max_budget}", budget=budget)


def pack(
    candidates: Sequence[PackCandidate], budget: int, cfg: PackingConfig,
    counter: TokenCounter, *, now: float | None = None, query: str | None = None,
) -> Payload:
    """Choose, cut and render candidates into a context of at most ``budget`` tokens.

    ``now`` (epoch seconds), when given with ``include_time``, opens the context
    with the current date so the model can judge the age of dated items.
    ``query`` keeps its terms in view when a long text must be cut. Timings are
    left empty for the caller. Raises InvalidBudget for a budget outside
    0..``LIMITS.max_budget``; a budget too small for any item gives an empty payload.
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
