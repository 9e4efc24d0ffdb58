"""What reading the store returns: search hits, a context payload and its items, recall's
hits and digest, and what a transcript sync did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from engine.api.base import FileIssue, Plain, known, line_range

# The tiers a surrogate is packed at (PayloadItem.tier).
TIERS: tuple[str, ...] = ("full", "gist", "micro")


@dataclass(frozen=True)
class SearchHit(Plain):
    """One ranked chunk; ``lanes`` maps lane name to its 1-based rank there.

    Where it is, for a file: ``path`` relative to ``root``, the folder it was ingested
    from (``path`` is the absolute path when no root was recorded), and ``lines``, its
    first and last line (1-based, inclusive) for text and code; "", None and None for
    sources that are not files.
    """

    chunk_id: int
    source_id: int
    source: str  # the source's uri (a path for files)
    title: str
    kind: str  # chunk kind
    source_kind: str
    text: str
    score: float
    lanes: Mapping[str, int]
    time: float | None = None
    ordinal: int = 0
    tokens: int = 0
    heading: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""
    root: str | None = None
    lines: tuple[int, int] | None = None
    stage: str = "ready"  # the source's stage (SOURCE_STAGES): "keyword" until its vectors

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        d = known(cls, data)
        d["lines"] = line_range(d.get("lines"))
        return cls(**d)


@dataclass(frozen=True)
class PayloadItem(Plain):
    """One item that made it into a context payload.

    ``kind`` is a chunk kind, ``surrogate``, ``live:<kind>`` or ``conversation``;
    ``tier`` is the surrogate tier it was packed at (None unless a surrogate);
    ``why`` a short machine-readable reason ("rerank", "neighbour", ...);
    ``stage`` the stage of the item's source (``SOURCE_STAGES``: "keyword" while its
    vectors are being made, so only the keyword lanes could find it), "" for live
    items and conversation turns.
    """

    kind: str
    source: str
    title: str
    time: float | None
    tokens: int  # tokens of this item's rendered block, as packed
    score: float
    lanes: Mapping[str, int]
    why: str
    chunk_ids: tuple[int, ...] = ()
    tier: str | None = None
    path: str = ""  # as SearchHit's: the file relative to root, for memory from files
    root: str | None = None
    lines: tuple[int, int] | None = None
    stage: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["score"] = round(self.score, 6)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PayloadItem:
        d = known(cls, data)
        d["chunk_ids"] = tuple(int(c) for c in d.get("chunk_ids") or ())
        d["lines"] = line_range(d.get("lines"))
        return cls(**d)


@dataclass(frozen=True)
class Payload(Plain):
    """build_context's result: ``total_tokens`` == cl100k tokens of ``context`` <= ``budget``."""

    context: str
    total_tokens: int
    budget: int
    items: tuple[PayloadItem, ...]
    timings: Mapping[str, float]  # stage -> milliseconds
    format: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "total_tokens": self.total_tokens,
                "budget": self.budget, "items": [i.to_dict() for i in self.items],
                "timings": {k: round(v, 3) for k, v in self.timings.items()},
                "format": self.format}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Payload:
        d = known(cls, data)
        d["items"] = tuple(PayloadItem.from_dict(i) for i in d.get("items") or ())
        return cls(**d)


# -- recall and sync ------------------------------------------------------------------

@dataclass(frozen=True)
class SyncResult(Plain):
    """What a transcript sync did: files seen, unchanged, read again in part or whole."""

    files: int
    unchanged: int = 0
    appended: int = 0
    full: int = 0
    chunks: int = 0
    bad_lines: int = 0
    errors: tuple[FileIssue, ...] = ()
    embedded: int = 0
    seconds: float = 0.0
    folders: tuple[str, ...] = ()
    # Where it looked for transcripts (the default places too, when none is there).
    looked_in: tuple[str, ...] = ()
    # Folders in the sync list that no longer exist (skipped; ``forget_folder`` drops one).
    missing: tuple[str, ...] = ()
    # The job that fits recall's learned reader again after this sync (it runs in the
    # background: ``wait`` for it to know it is done); "" when no fit was needed.
    adapt_job: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SyncResult:
        d = known(cls, data)
        d["errors"] = tuple(FileIssue.from_dict(e) for e in d.get("errors") or ())
        d["folders"] = tuple(str(f) for f in d.get("folders") or ())
        d["looked_in"] = tuple(str(f) for f in d.get("looked_in") or ())
        d["missing"] = tuple(str(f) for f in d.get("missing") or ())
        return cls(**d)


# Tokens ``RecallHit.entry`` adds to a hit besides its line and excerpt (its number, kind
# and line breaks: "[10] [turn_pair] " and three newlines are 9 cl100k tokens, and a join
# can take one more); a budgeted recall counts them for each hit. Hand-set.
HIT_OVERHEAD = 10
# Tokens kept for ``RecallResult.omitted_note`` ("[6 more hits did not fit in 2000 tokens:
# ask with a larger budget or a smaller k]" is 23; longer numbers take more). Hand-set.
OMITTED_NOTE = 28


@dataclass(frozen=True)
class RecallHit(SearchHit):
    """A recall hit: a turn of a coding session, named by its best chunk (id, kind,
    place), with ``text`` (the request and the turn's chunks that answer best, within
    recall.turn_hit_tokens), ``line`` (session, date, branch and what came of the
    turn, in one line), ``excerpt`` (the lines that answer the query, within
    recall.hit_excerpt_tokens, or its share of the budget a query was asked with: then
    the whole text when it fits; lines an earlier hit shows are not shown again) and
    ``chunks`` (the ids of the chunks the text draws on, best first: a tool call's hit
    shown with its answering part, ``recall.part_lines``, names that part after it)."""

    line: str = ""
    excerpt: str = ""
    chunks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))  # a list off the wire

    def entry(self, number: int) -> str:
        """The hit as an agent reads it, ``number``-th of its result: ``[number] [kind]``
        and its line, then its excerpt and a blank line (what a budgeted recall sized:
        the line, the excerpt and ``HIT_OVERHEAD``)."""
        return f"[{number}] [{self.kind}] {self.line}\n{self.excerpt}\n"


@dataclass(frozen=True)
class RecallResult(Plain):
    """recall's result: ``hits`` for a query, or (``auto``) the digest in ``context``.

    ``total_tokens`` and ``budget``: the digest's tokens and budget; for a query asked
    with a budget, what its hits take (lines and excerpts) and that budget, and
    ``omitted``, how many hits it left out to stay within it.

    ``indexed`` and ``synced`` say what a sync asked for with the call did. The
    wire form carries only the parts present (a query's ``hits``, or the digest's
    fields), after ``indexed`` and ``synced``.
    """

    hits: tuple[RecallHit, ...] | None = None
    context: str | None = None  # the auto digest, None for a query
    total_tokens: int = 0
    budget: int = 0
    project: str | None = None
    branch: str | None = None
    sessions: int = 0
    failures: int = 0
    related: int = 0
    format: str = "context"
    output: str | None = None  # the digest as the agent's hook wants it (fmt claude-hook)
    indexed: SyncResult | None = None
    synced: SyncResult | None = None
    omitted: int = 0  # a query asked within a budget: the hits it left out

    _DIGEST: ClassVar[tuple[str, ...]] = ("context", "total_tokens", "budget", "project",
                                          "branch", "sessions", "failures", "related",
                                          "format")

    def omitted_note(self) -> str:
        """What an agent is told of the hits a budgeted query left out ("" when none was;
        the budget kept ``OMITTED_NOTE`` tokens for it)."""
        if not self.omitted:
            return ""
        return (f"[{self.omitted} more hits did not fit in {self.budget} tokens: "
                "ask with a larger budget or a smaller k]")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("indexed", "synced"):
            part = getattr(self, name)
            if part is not None:
                out[name] = part.to_dict()
        if self.context is not None:
            out.update({name: getattr(self, name) for name in self._DIGEST})
            if self.output is not None:
                out["output"] = self.output
        if self.hits is not None:
            out["hits"] = [h.to_dict() for h in self.hits]
            if self.budget:  # a query asked within a budget: what its hits take of it
                out.update(total_tokens=self.total_tokens, budget=self.budget,
                           omitted=self.omitted)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallResult:
        d = known(cls, data)
        if d.get("hits") is not None:
            d["hits"] = tuple(RecallHit.from_dict(h) for h in d["hits"])
        for name in ("indexed", "synced"):
            if isinstance(d.get(name), Mapping):
                d[name] = SyncResult.from_dict(d[name])
        return cls(**d)

