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
still fit). Nothing is packed twice: same key, a chunk set already covered (a
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
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import ConfigError, InvalidBudget
from engine.packing.candidates import PackCandidate
from engine.packing.render import (
    FORMATS,
    GROUP_ORDER,
    MAX_SOURCE_CHARS,
    MAX_TITLE_CHARS,
    BlockView,
    Renderer,
    clean_line,
    code_lang,
    format_time,
    get_renderer,
    normalize_body,
    short_source,
)
from engine.tokens import TokenCounter
from engine.types import ContextPayload, PayloadItem

MAX_BUDGET = 200_000
MODES = ("fast", "dense_cached")
_CUT_MARK = " …"
_WINDOW_MARK = "… "
# Texts are cut by characters before counting, so that a huge text is never
# encoded whole; generous enough that this cut never binds before the token cap.
_CHARS_PER_TOKEN_BOUND = 48
_QUERY_TERM_RE = re.compile(r"\w{3,}")

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
    neighbour_before: float = 0.8

    def __post_init__(self) -> None:
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


@dataclass(eq=False)
class _Piece:
    """One candidate on its way into the payload (mutable working state)."""

    cand: PackCandidate
    idx: int  # position in the input
    rank: int  # position in score order
    reason: str
    raw: str  # the text chosen for it: expanded, surrogate or plain
    cap: int  # body token cap
    label: str
    anchor: str = ""  # text that should stay in view when the body is cut
    view: BlockView | None = None
    run: tuple[object, ...] = ()  # items with the same run share one header
    grouped: bool = False  # rendered inside a run (else a block with its own header)
    run_cost: int = 0  # tokens of the run's header (0 where items carry their own)
    ready: bool = False  # body and cost computed
    body: str = ""
    capped: bool = False  # body already cut to its cap
    cost: int = -1  # tokens of the whole item + separator (without the run header)
    head_cost: int = -1  # tokens of the item with an empty body + separator
    placed: str | None = None  # body as packed
    tokens: int = 0  # tokens of the packed block + separator


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
) -> ContextPayload:
    """Choose, cut and render candidates into a context of at most ``budget`` tokens.

    ``now`` (epoch seconds), when given with ``include_time``, opens the context
    with the current date so the model can judge the age of dated items.
    ``query`` keeps its terms in view when a long text must be cut. Timings are
    left empty for the caller. Raises InvalidBudget for a budget outside
    0..MAX_BUDGET; a budget too small for any item gives an empty payload.
    """
    _check_budget(budget)
    if budget == 0 or not candidates:
        return ContextPayload("", 0, budget, (), {}, cfg.fmt)
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
        self.query_re = _query_pattern(query)
        self.used = 0
        self.live_used = 0
        self.open_groups: set[str] = set()
        self.open_runs: set[tuple[object, ...]] = set()
        # (label, section, source, title, time) -> (view, run header cost, empty item cost)
        self.heads: dict[tuple[object, ...], tuple[BlockView, int, int]] = {}
        self.keys: set[str] = set()
        self.covered: set[int] = set()
        self.bodies: set[tuple[str, str]] = set()
        self.placed: list[_Piece] = []
        self._split(candidates)

    def _split(self, candidates: Sequence[PackCandidate]) -> None:
        order = sorted(range(len(candidates)),
                       key=lambda i: (_rank_key(candidates[i].score), candidates[i].key, i))
        cfg = self.cfg
        self.first: list[_Piece] = []
        self.surrogates: list[_Piece] = []
        self.snippets: list[_Piece] = []
        self.others: list[_Piece] = []
        n_memory = 0
        for rank, i in enumerate(order):
            c = candidates[i]
            if c.section == "memory":
                if n_memory < cfg.expand_top:
                    if c.expanded:
                        self.first.append(_Piece(c, i, rank, "top_hit_expanded", c.expanded,
                                                 cfg.expansion_max_tokens, c.kind, anchor=c.text))
                    else:
                        self.first.append(_Piece(c, i, rank, "top_hit", c.text,
                                                 cfg.max_item_tokens, c.kind))
                elif cfg.mode == "dense_cached" and c.surrogate:
                    label = f"summary:{c.tier}" if c.tier else "summary"
                    self.surrogates.append(
                        _Piece(c, i, rank, "surrogate", c.surrogate, cfg.max_item_tokens, label))
                else:
                    self.snippets.append(
                        _Piece(c, i, rank, "snippet", c.text, cfg.max_item_tokens, c.kind))
                n_memory += 1
            elif c.section == "live":
                label = c.kind if c.kind.startswith("live:") else f"live:{c.kind}"
                self.others.append(_Piece(c, i, rank, "live", c.text, cfg.max_item_tokens, label))
            else:
                self.others.append(_Piece(c, i, rank, "conversation", c.text, cfg.max_item_tokens,
                                          "conversation"))
        has_memory = n_memory > 0
        self.live_cap = math.floor(cfg.live_max_share * self.budget) if has_memory else self.budget

    # -- preparing one piece ------------------------------------------------

    def _prepare_head(self, p: _Piece) -> None:
        """The item header and its cost (cheap: pieces of one run share the work)."""
        if p.view is not None:
            return
        c = p.cand
        p.grouped = self.r.grouped and c.section == "memory"
        key = (p.label, c.section, c.source, c.title, c.time)
        known = self.heads.get(key)
        if known is None:
            view = self._view(p)
            run_cost = self.counter.count(self.r.run_header(view)) if p.grouped else 0
            empty = self.r.item(view, "") if p.grouped else self.r.block(view, "")
            known = self.heads[key] = (view, run_cost, self.counter.count(empty + self.r.sep))
        p.view, p.run_cost, p.head_cost = known
        p.run = (c.section, c.source, p.view) if p.grouped else (c.section, p.idx)

    def _view(self, p: _Piece) -> BlockView:
        c = p.cand
        label = clean_line(p.label, 40)
        source = short_source(c.source)
        title = clean_line(c.title, MAX_TITLE_CHARS)
        if title in (source, clean_line(c.source, MAX_SOURCE_CHARS)):
            title = ""
        if source == label:  # e.g. a conversation turn whose source is "conversation"
            source = ""
        if title and p.grouped and not _locator(c.source):
            source = ""  # an opaque id ("conversation:3f2a…") says less than the title
        return BlockView(label, source, title,
                         format_time(c.time) if self.cfg.include_time else "",
                         code_lang(p.label, source))

    def _item(self, p: _Piece, body: str) -> str:
        """The piece as rendered without its run header (the whole block when alone)."""
        assert p.view is not None
        return self.r.item(p.view, body) if p.grouped else self.r.block(p.view, body)

    def _prepare(self, p: _Piece) -> None:
        """The body, capped at the piece's token cap, and the cost of the whole block."""
        if p.ready:
            return
        self._prepare_head(p)
        assert p.view is not None
        p.ready = True
        limit = p.cap * _CHARS_PER_TOKEN_BOUND + 64
        raw, start = p.raw, 0
        if len(raw) > limit:  # a long text: start the window near its anchor if needed
            pos, size = self._anchor(raw, p)
            if pos > 0 and pos + size > limit // 2:
                start = _line_start(raw, pos)
        body = normalize_body(raw[start:start + limit])
        p.capped = start > 0 or len(raw) > start + limit
        if not body:
            return
        if start > 0:
            body = _WINDOW_MARK + body
        if len(raw) > start + limit:
            body += _CUT_MARK
        count, sep = self.counter.count, self.r.sep
        p.cost = count(self._item(p, body) + sep)
        if p.cost - p.head_cost > p.cap:
            body = self._cut(self._focus(body, p), p.cap)
            p.capped = True
            p.cost = count(self._item(p, body) + sep)
        p.body = body

    def _anchor(self, text: str, p: _Piece) -> tuple[int, int]:
        """Where the text the reader needs is: the hit inside an expanded block, or
        the first query term; (-1, 0) when there is none."""
        if p.anchor:
            anchor = normalize_body(p.anchor)[:200]
            return (text.find(anchor), len(anchor)) if anchor else (-1, 0)
        if self.query_re is not None and (m := self.query_re.search(text)):
            return m.start(), m.end() - m.start()
        return -1, 0

    def _focus(self, body: str, p: _Piece) -> str:
        """Start a too-long body near its anchor when a prefix cut would lose it."""
        pos, size = self._anchor(body, p)
        if pos <= 0 or len(self.counter.truncate(body, p.cap - 1)) >= pos + size:
            return body
        start = _line_start(body, pos)
        if start <= len(_WINDOW_MARK):
            return body
        return _WINDOW_MARK + body[start:]

    def _cut(self, text: str, allowance: int) -> str:
        """``text`` cut to ``allowance`` tokens at a token boundary, marked as cut."""
        if allowance <= 1:
            return ""
        cut = self.counter.truncate(text, allowance - 1).rstrip()
        if not cut or cut == text.rstrip():
            return cut
        return cut + _CUT_MARK

    # -- placing -------------------------------------------------------------

    def _try(self, p: _Piece, limit: int) -> int:
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
        self._prepare_head(p)
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
        self._prepare(p)
        if not p.body:
            return _DUPLICATE
        if (section, p.body) in self.bodies:
            return _DUPLICATE
        if p.cost <= room:
            self._place(p, p.body, p.cost, overhead)
            return _PLACED
        return self._try_cut(p, room, overhead)

    def _too_long(self, p: _Piece, body_room: int) -> bool:
        """Cheap probe for a nearly full budget: when no cut is possible any more,
        an item whose text already starts with more than ``body_room`` tokens is
        skipped without being prepared. This only saves time; the invariants are
        proven on the final string whatever it decides."""
        if body_room <= 0:
            return True
        if body_room >= self.cfg.min_snippet_tokens or body_room >= p.cap:
            return False
        probe = p.raw[: (body_room + 1) * 8]
        return len(probe) < len(p.raw) and self.counter.count(probe) > body_room + 2

    def _try_cut(self, p: _Piece, room: int, overhead: int) -> int:
        assert p.view is not None
        count, sep = self.counter.count, self.r.sep
        allowance = room - p.head_cost
        for _ in range(8):
            if allowance < self.cfg.min_snippet_tokens:
                return _NO_FIT
            body = self._cut(p.body, allowance)
            if not body:
                return _NO_FIT
            tokens = count(self._item(p, body) + sep)
            if tokens <= room:
                self._place(p, body, tokens, overhead)
                return _PLACED
            # Shrink in proportion to how much the rendered body overshot.
            used_by_body = max(tokens - p.head_cost, 1)
            allowance = min(allowance - 1, allowance * (room - p.head_cost) // used_by_body)
        return _NO_FIT

    def _place(self, p: _Piece, body: str, tokens: int, overhead: int) -> None:
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

    def run(self) -> ContextPayload:
        live = [p for p in self.others if p.cand.section == "live"]
        reserve = 0
        if live and (self.first or self.surrogates or self.snippets):
            for p in live:
                self._prepare(p)
            demand = self.group_cost["live"] + sum(max(p.cost, 0) for p in live)
            reserve = min(self.live_cap, demand)
        left_over: list[_Piece] = []
        for p in (*self.first, *self.surrogates, *self.snippets):
            if self._try(p, self.budget - reserve) == _NO_FIT:
                left_over.append(p)
        for p in self.others:
            self._try(p, self.budget)
        for p in left_over:
            self._try(p, self.budget)
        return self._finish()

    def _finish(self) -> ContextPayload:
        """Render the placed pieces; prove the count on the final string, trimming
        the last-placed piece until it fits (only needed if BPE merged across blocks)."""
        while self.placed:
            parts = self._parts()
            context = "".join(text for text, _, _ in parts)
            total = self.counter.count(context)
            if total <= self.budget:
                return self._payload(parts, context, total)
            self.placed.pop()
        return ContextPayload("", 0, self.budget, (), {}, self.cfg.fmt)

    def _parts(self) -> list[tuple[str, int, _Piece | None]]:
        """The context as (text, tokens, piece) blocks in rendering order."""
        r = self.r
        parts: list[tuple[str, int, _Piece | None]] = []
        if self.head:
            parts.append((self.head, self.counter.count(self.head), None))
        for section in GROUP_ORDER:
            group = [p for p in self.placed if p.cand.section == section]
            if not group:
                continue
            if section == "conversation" and all(_finite(p.cand.time) for p in group):
                group.sort(key=lambda p: (p.cand.time, p.idx))
            elif section == "conversation":
                group.sort(key=lambda p: p.idx)
            else:
                group.sort(key=lambda p: p.rank)
            header = r.group(section)
            if header:
                parts.append((header, self.group_cost[section], None))
            for run in _runs(group):
                for j, p in enumerate(run):
                    parts.append(self._render(p, first=j == 0, last=j == len(run) - 1))
        last = max(i for i, part in enumerate(parts) if part[2] is not None)
        text, _, piece = parts[last]
        text = text[: len(text) - len(r.sep)] + r.last_sep
        parts[last] = (text, self.counter.count(text), piece)
        if self.foot:
            parts.append((self.foot, self.counter.count(self.foot), None))
        return parts

    def _payload(self, parts: list[tuple[str, int, _Piece | None]], context: str,
                 total: int) -> ContextPayload:
        tokens = [t for _, t, _ in parts]
        if sum(tokens) != total:
            # Blocks merged in BPE after all: charge each block its marginal tokens.
            ends, pos = [], 0
            for text, _, _ in parts:
                pos += len(text)
                ends.append(pos)
            prefix = self.counter.count_batch([context[:e] for e in ends])
            tokens = [max(0, b - a) for a, b in zip([0, *prefix[:-1]], prefix, strict=True)]
        items = []
        for (_, _, p), exact in zip(parts, tokens, strict=True):
            if p is None:
                continue
            c = p.cand
            why = p.reason + ("|cut" if p.capped or p.placed != p.body else "")
            items.append(PayloadItem(
                kind=_item_kind(p), source=c.source, title=c.title, time=c.time, tokens=exact,
                score=c.score, lanes=dict(c.lanes), why=_why(why, c.why),
                chunk_ids=tuple(c.chunk_ids)))
        return ContextPayload(context, total, self.budget, tuple(items), {}, self.cfg.fmt)


    def _render(self, p: _Piece, *, first: bool, last: bool) -> tuple[str, int, _Piece]:
        """One placed piece as rendered inside its run, with its exact tokens."""
        assert p.view is not None and p.placed is not None
        item = self._item(p, p.placed)
        sep = self.r.item_sep(item, last) if p.grouped else self.r.sep
        head = self.r.run_header(p.view) if first and p.grouped else ""
        tokens = p.tokens if sep == self.r.sep else self.counter.count(item + sep)
        return head + item + sep, tokens + (p.run_cost if head else 0), p


def _runs(group: list[_Piece]) -> list[list[_Piece]]:
    """Pieces (in rank order) gathered into runs that share a header: runs in the
    order of their best piece, pieces in a run by their position in the source."""
    runs: dict[tuple[object, ...], list[_Piece]] = {}
    for p in group:
        runs.setdefault(p.run, []).append(p)
    out = list(runs.values())
    for run in out:
        if len(run) > 1:
            run.sort(key=lambda p: (_position(p.cand.position), p.rank))
    return out


def _position(pos: float | None) -> tuple[bool, float]:
    return (True, 0.0) if pos is None or not math.isfinite(pos) else (False, pos)


def _locator(source: str) -> bool:
    """Whether a source names a place a reader could go: a path or a URL."""
    return "/" in source or "\\" in source


def _why(ours: str, theirs: str) -> str:
    return f"{ours}|{theirs}" if theirs and theirs != ours else ours


def _finite(t: float | None) -> bool:
    return t is not None and math.isfinite(t)


def _item_kind(p: _Piece) -> str:
    if p.reason == "surrogate":
        return "surrogate"
    if p.reason in ("live", "conversation"):
        return p.label
    return p.cand.kind


def _line_start(text: str, pos: int) -> int:
    """Where a window showing ``pos`` starts: its line, or a word ~80 characters
    before it on a long line."""
    start = text.rfind("\n", 0, pos) + 1
    if pos - start > 200:
        start = text.rfind(" ", start, pos - 80) + 1
    return start


def _query_pattern(query: str | None) -> re.Pattern[str] | None:
    if not query:
        return None
    terms = sorted({t.lower() for t in _QUERY_TERM_RE.findall(query)}, key=lambda t: (-len(t), t))
    if not terms:
        return None
    return re.compile("|".join(re.escape(t) for t in terms[:16]), re.IGNORECASE)
