"""The packer's input: one candidate item, already ranked and merged by the caller."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.errors import InvalidItemKind

# Where an item comes from; also the groups of the rendered context.
SECTIONS = ("memory", "live", "conversation")


@dataclass(frozen=True)
class PackCandidate:
    """One item that may go into a context payload.

    ``key`` identifies the item (two candidates with the same key are never both
    packed). ``text`` is the snippet (one chunk, one live item, one turn).
    ``expanded``, given for the top hits, is the hit with its neighbouring
    chunks (or its whole section) already merged by the caller; ``chunk_ids``
    then lists every chunk it covers, so that snippets of those chunks are not
    packed a second time. ``surrogate`` is a summary of the chosen ``tier``,
    used instead of ``text`` in ``dense_cached`` mode. ``why`` is the caller's
    short machine-readable reason, appended to the packer's own. ``position`` is
    the item's place inside its source (a chunk's ordinal): items of one source
    that share a header are rendered under it in this order. ``text_tokens`` is
    ``text``'s count in cl100k tokens where the caller knows it (a stored chunk's
    count, made at ingest): the packer uses it only to pass over an item too long
    for the room left, never to place one (placed items are always counted).
    ``path``, ``root`` and ``lines`` say where a file's item is (SearchHit's fields):
    the header names ``path:first-last``, and the payload item carries all three.
    """

    key: str
    section: str  # one of SECTIONS
    kind: str  # chunk kind, "surrogate", or "live:<kind>" for live items
    source: str
    title: str
    time: float | None
    score: float
    lanes: Mapping[str, int] = field(default_factory=dict)
    text: str = ""
    expanded: str | None = None
    surrogate: str | None = None
    tier: str | None = None
    chunk_ids: tuple[int, ...] = ()
    why: str = ""
    position: float | None = None
    text_tokens: int | None = None
    path: str = ""  # a file's path under root: the header shows it instead of the uri
    root: str | None = None
    lines: tuple[int, int] | None = None  # first and last line of what ``text`` covers

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise InvalidItemKind("unknown candidate section", allowed=list(SECTIONS))
