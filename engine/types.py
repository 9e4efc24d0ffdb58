"""Plain data passed between the engine's parts (no behaviour, no I/O).

What the engine returns to its callers is in ``engine.api``; these are drafts and
inputs that stay inside.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

# Source kinds: what a stored source is.
SOURCE_KINDS = ("document", "code", "text", "conversation", "transcript")
# Chunk kinds: what one stored chunk is. "section" is ordinary document text.
# "turn_pair", "thinking", "session_code" and "tool" are coding sessions' alone.
CHUNK_KINDS = ("section", "code", "turn", "turn_pair", "thinking", "session_code", "tool",
               "surrogate")
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
class LiveItem:
    """An item of the caller's live context (from a context gatherer)."""

    kind: str  # one of LIVE_KINDS
    source: str
    title: str
    text: str
    captured_at: float | None = None


@dataclass(frozen=True)
class ConversationTurn:
    """A turn of the caller's conversation, given to build_context beside its query."""

    role: str  # "user" | "assistant" | a speaker name
    text: str
    time: float | None = None


# What build_context takes beside its query, said once for EngineAPI, the facade, ipc's
# RemoteEngine and the search room: the typed items, or mappings of the same fields.
LiveItems: TypeAlias = Sequence[LiveItem | Mapping[str, Any]]
ConversationTurns: TypeAlias = Sequence[ConversationTurn | Mapping[str, Any]]
