"""One candidate on its way into the payload: its header, its capped body, its cost.

``Piece`` is the packer's mutable working record of one candidate. ``PieceMaker``
fills it in for one ``pack`` call: the item header (worked out once for all the
pieces of one run), the body capped at the piece's token cap and, when a text is
longer than that, cut where the reader needs it (around the hit an expanded block
was expanded from, or the first query term; marked ``… `` at the start and `` …``
at the end), and the exact token cost of the rendered block. Which pieces get
budget is decided in ``packer``; the placed pieces are rendered in ``assemble``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.packing.candidates import PackCandidate
from engine.packing.render import (
    MAX_SOURCE_CHARS,
    MAX_TITLE_CHARS,
    BlockView,
    Renderer,
    clean_line,
    code_lang,
    format_time,
    line_span,
    normalize_body,
    short_path,
    short_source,
)
from engine.tokens import TokenCounter

_CUT_MARK = " …"
_WINDOW_MARK = "… "
# Texts are cut by characters before counting, so that a huge text is never
# encoded whole; generous enough that this cut never binds before the token cap.
_CHARS_PER_TOKEN_BOUND = 48
_QUERY_TERM_RE = re.compile(r"\w{3,}")


@dataclass(eq=False)
class Piece:
    """One candidate on its way into the payload (mutable working state)."""

    cand: PackCandidate
    idx: int  # position in the input
    rank: int  # position in score order
    reason: str
    raw: str  # the text chosen for it: expanded, surrogate or plain
    cap: int  # body token cap
    label: str
    anchor: str = ""  # text that should stay in view when the body is cut
    raw_tokens: int | None = None  # raw's token count, where the candidate says it
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


class PieceMaker:
    """Prepares the pieces of one ``pack`` call: headers, capped bodies, costs and cuts."""

    def __init__(self, r: Renderer, counter: TokenCounter, *, include_time: bool,
                 query: str | None, unlabelled_kinds: tuple[str, ...] = ()) -> None:
        self.r, self.counter = r, counter
        self.include_time = include_time
        self.unlabelled_kinds = frozenset(unlabelled_kinds)
        self.query_re = _query_pattern(query)
        # (label, section, source, title, time) -> (view, run header cost, empty item cost)
        self.heads: dict[tuple[object, ...], tuple[BlockView, int, int]] = {}

    def prepare_head(self, p: Piece) -> None:
        """The item header and its cost (cheap: pieces of one run share the work)."""
        if p.view is not None:
            return
        c = p.cand
        p.grouped = self.r.grouped and c.section == "memory"
        key = (p.label, c.section, c.source, c.title, c.time, c.path, c.lines)
        known = self.heads.get(key)
        if known is None:
            view = self._view(p)
            run_cost = self.counter.count(self.r.run_header(view)) if p.grouped else 0
            empty = self.r.item(view, "") if p.grouped else self.r.block(view, "")
            known = self.heads[key] = (view, run_cost, self.counter.count(empty + self.r.sep))
        p.view, p.run_cost, p.head_cost = known
        p.run = (c.section, c.source, p.view) if p.grouped else (c.section, p.idx)

    def _view(self, p: Piece) -> BlockView:
        c = p.cand
        label = clean_line(p.label, 40)
        source = short_path(c.path) if c.path else short_source(c.source)
        title = clean_line(c.title, MAX_TITLE_CHARS)
        name = short_source(c.path or c.source)
        if title in (source, clean_line(c.source, MAX_SOURCE_CHARS), name):
            title = ""  # a file's title is its name, which the path already shows
        if source == label:  # e.g. a conversation turn whose source is "conversation"
            source = ""
        if title and p.grouped and not _locator(c.source):
            source = ""  # an opaque id ("conversation:3f2a…") says less than the title
        when = format_time(c.time) if self.include_time else ""
        if p.grouped and p.label in self.unlabelled_kinds and (when or source):
            label = ""  # e.g. chat turns: their "Speaker: text" lines say what they are
        return BlockView(label, source, title, when, code_lang(p.label, source),
                         line_span(c.lines) if c.path and p.reason != "surrogate" else "")

    def item(self, p: Piece, body: str) -> str:
        """The piece as rendered without its run header (the whole block when alone)."""
        assert p.view is not None
        return self.r.item(p.view, body) if p.grouped else self.r.block(p.view, body)

    def prepare(self, p: Piece) -> None:
        """The body, capped at the piece's token cap, and the cost of the whole block."""
        if p.ready:
            return
        self.prepare_head(p)
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
        if start == 0:
            body = _without_title(body, p.view.title)
        if not body:
            return
        if start > 0:
            body = _WINDOW_MARK + body
        if len(raw) > start + limit:
            body += _CUT_MARK
        count, sep = self.counter.count, self.r.sep
        p.cost = count(self.item(p, body) + sep)
        if p.cost - p.head_cost > p.cap:
            body = self.cut(self._focus(body, p), p.cap)
            p.capped = True
            p.cost = count(self.item(p, body) + sep)
        p.body = body

    def _anchor(self, text: str, p: Piece) -> tuple[int, int]:
        """Where the text the reader needs is: the hit inside an expanded block, or
        the first query term; (-1, 0) when there is none."""
        if p.anchor:
            anchor = normalize_body(p.anchor)[:200]
            return (text.find(anchor), len(anchor)) if anchor else (-1, 0)
        if self.query_re is not None and (m := self.query_re.search(text)):
            return m.start(), m.end() - m.start()
        return -1, 0

    def _focus(self, body: str, p: Piece) -> str:
        """Start a too-long body near its anchor when a prefix cut would lose it."""
        pos, size = self._anchor(body, p)
        if pos <= 0 or len(self.counter.truncate(body, p.cap - 1)) >= pos + size:
            return body
        start = _line_start(body, pos)
        if start <= len(_WINDOW_MARK):
            return body
        return _WINDOW_MARK + body[start:]

    def cut(self, text: str, allowance: int) -> str:
        """``text`` cut to ``allowance`` tokens at a token boundary, marked as cut."""
        if allowance <= 1:
            return ""
        cut = self.counter.truncate(text, allowance - 1).rstrip()
        if not cut or cut == text.rstrip():
            return cut
        return cut + _CUT_MARK


def _without_title(body: str, title: str) -> str:
    """``body`` without its first line when that line is the title the header already
    shows (a document's first chunk starts with its title): sent once, not twice.
    Kept when nothing else would be left."""
    if not title:
        return body
    first, newline, rest = body.partition("\n")
    if not newline or clean_line(first, len(first) + 1) != title:
        return body
    rest = normalize_body(rest)
    return rest or body


def _locator(source: str) -> bool:
    """Whether a source names a place a reader could go: a path or a URL."""
    return "/" in source or "\\" in source


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
