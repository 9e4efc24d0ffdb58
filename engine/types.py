"""Plain data passed between the engine's parts (no behaviour, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Source kinds: what a stored source is.
SOURCE_KINDS = ("document", "code", "text", "conversation", "transcript")
# Chunk kinds: what one stored chunk is. "section" is ordinary document text.
CHUNK_KINDS = ("section", "code", "turn", "turn_pair", "thinking", "tool", "surrogate")
# Live item kinds, as sent by a context gatherer.
LIVE_KINDS = ("active_file", "selection", "clipboard", "browser_tab", "terminal", "window", "other")


@dataclass(frozen=True)
class LoadedDocument:
    """What a loader returns: the text of one source and its metadata."""

    uri: str  # absolute path, "stdin:<n>", or "text:<hash>"
    kind: str  # one of SOURCE_KINDS
    title: str
    text: str
    fmt: str  # "markdown", "text", "code", "html", "pdf", "docx", "json", "conversation"
    language: str | None = None  # programming language for code
    created_at: float | None = None  # epoch seconds (file mtime or given date)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it is stored: text plus where it came from."""

    text: str
    ordinal: int  # position in the source, 0-based
    tokens: int  # cl100k tokens of ``text``
    kind: str = "section"  # one of CHUNK_KINDS
    heading: str = ""  # heading path ("Install > Linux") or code symbol
    start: int = 0  # char offset into the source text
    time: float | None = None  # when the content happened (turn date), epoch seconds
    meta: dict[str, Any] = field(default_factory=dict)  # speaker, language, session...


@dataclass(frozen=True)
class SearchHit:
    """One ranked chunk from search; ``lanes`` maps lane name to 1-based rank."""

    chunk_id: int
    source_id: int
    source: str  # source uri
    title: str
    kind: str  # chunk kind
    source_kind: str
    text: str
    score: float
    lanes: dict[str, int]
    time: float | None = None
    ordinal: int = 0
    tokens: int = 0
    heading: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LiveItem:
    """An item of the caller's live context (from a context gatherer)."""

    kind: str  # one of LIVE_KINDS
    source: str
    title: str
    text: str
    captured_at: float | None = None


@dataclass(frozen=True)
class ConversationTurn:
    role: str  # "user" | "assistant" | a speaker name
    text: str
    time: float | None = None


@dataclass(frozen=True)
class PayloadItem:
    """One item that made it into a context payload."""

    kind: str  # chunk kind, "surrogate", "live:<kind>", or "conversation"
    source: str
    title: str
    time: float | None
    tokens: int  # tokens of this item's rendered block, as packed
    score: float
    lanes: dict[str, int]
    why: str  # short machine-readable reason: "top_hit_expanded", "snippet", ...
    chunk_ids: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "source": self.source, "title": self.title, "time": self.time,
            "tokens": self.tokens, "score": round(self.score, 6), "lanes": dict(self.lanes),
            "why": self.why, "chunk_ids": list(self.chunk_ids),
        }


@dataclass(frozen=True)
class ContextPayload:
    """The result of build_context: ``total_tokens`` == tokens of ``context`` <= ``budget``."""

    context: str
    total_tokens: int
    budget: int
    items: tuple[PayloadItem, ...]
    timings: dict[str, float]  # stage -> milliseconds
    format: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context, "total_tokens": self.total_tokens, "budget": self.budget,
            "items": [i.to_dict() for i in self.items],
            "timings": {k: round(v, 3) for k, v in self.timings.items()}, "format": self.format,
        }
