"""The last step of packing: the placed pieces rendered, counted and paid for.

Groups come in ``GROUP_ORDER``. Inside a group, memory and live items keep their
rank order, conversation turns go in time order (input order unless every turn has
a time), and memory pieces that share a header are gathered into runs under it, in
their order in the source; the last item ends with the format's closing
separator. The count is proven on the final string: should it exceed the budget
(only if BPE merged across blocks), the last-placed piece is dropped and the rest
rendered again, and each item is charged its exact (marginal) tokens, so that
``total_tokens == sum(item.tokens) + overhead == counter.count(context)``.
"""

from __future__ import annotations

import math

from engine.api import Payload, PayloadItem
from engine.packing.pieces import Piece, PieceMaker
from engine.packing.render import GROUP_ORDER


class Assembler:
    """Renders the pieces one ``pack`` call placed and builds its ``Payload``."""

    def __init__(self, pieces: PieceMaker, head: str, foot: str, group_cost: dict[str, int],
                 budget: int, fmt: str) -> None:
        self.pieces = pieces
        self.r, self.counter = pieces.r, pieces.counter
        self.head, self.foot, self.group_cost = head, foot, group_cost
        self.budget, self.fmt = budget, fmt

    def finish(self, placed: list[Piece]) -> Payload:
        """Render the placed pieces; prove the count on the final string, trimming
        the last-placed piece until it fits (only needed if BPE merged across blocks)."""
        while placed:
            parts = self._parts(placed)
            context = "".join(text for text, _, _ in parts)
            total = self.counter.count(context)
            if total <= self.budget:
                return self._payload(parts, context, total)
            placed.pop()
        return Payload("", 0, self.budget, (), {}, self.fmt)

    def _parts(self, placed: list[Piece]) -> list[tuple[str, int, Piece | None]]:
        """The context as (text, tokens, piece) blocks in rendering order."""
        r = self.r
        parts: list[tuple[str, int, Piece | None]] = []
        if self.head:
            parts.append((self.head, self.counter.count(self.head), None))
        for section in GROUP_ORDER:
            group = [p for p in placed if p.cand.section == section]
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

    def _payload(self, parts: list[tuple[str, int, Piece | None]], context: str,
                 total: int) -> Payload:
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
                chunk_ids=tuple(c.chunk_ids),
                tier=c.tier if p.reason == "surrogate" else None, path=c.path, root=c.root,
                lines=c.lines if p.reason != "surrogate" else None))
        return Payload(context, total, self.budget, tuple(items), {}, self.fmt)

    def _render(self, p: Piece, *, first: bool, last: bool) -> tuple[str, int, Piece]:
        """One placed piece as rendered inside its run, with its exact tokens."""
        assert p.view is not None and p.placed is not None
        item = self.pieces.item(p, p.placed)
        sep = self.r.item_sep(item, last) if p.grouped else self.r.sep
        head = self.r.run_header(p.view) if first and p.grouped else ""
        tokens = p.tokens if sep == self.r.sep else self.counter.count(item + sep)
        return head + item + sep, tokens + (p.run_cost if head else 0), p


def _runs(group: list[Piece]) -> list[list[Piece]]:
    """Pieces (in rank order) gathered into runs that share a header: runs in the
    order of their best piece, pieces in a run by their position in the source."""
    runs: dict[tuple[object, ...], list[Piece]] = {}
    for p in group:
        runs.setdefault(p.run, []).append(p)
    out = list(runs.values())
    for run in out:
        if len(run) > 1:
            run.sort(key=lambda p: (_position(p.cand.position), p.rank))
    return out


def _position(pos: float | None) -> tuple[bool, float]:
    return (True, 0.0) if pos is None or not math.isfinite(pos) else (False, pos)


def _why(ours: str, theirs: str) -> str:
    return f"{ours}|{theirs}" if theirs and theirs != ours else ours


def _finite(t: float | None) -> bool:
    return t is not None and math.isfinite(t)


def _item_kind(p: Piece) -> str:
    if p.reason == "surrogate":
        return "surrogate"
    if p.reason in ("live", "conversation"):
        return p.label
    return p.cand.kind
