"""The limits of what a caller may ask (``LIMITS``), one home for the engine and the wire:
ipc/wire.py and the MCP server read them from here (``from engine import LIMITS``) rather
than keeping copies; docs/wire.md's limits table names them by these field names.

The live and query limits are the [search] section's defaults (a store's config may raise
them for in-process callers; the wire keeps these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Each limit once, by the name docs/wire.md gives it."""

    min_budget: int = 1  # tokens a call asks for, at least one (0 would be an empty context)
    max_budget: int = 200_000
    max_query_chars: int = 4_000  # build_context, search: the query analyzer reads no more
    max_live_items: int = 64
    max_live_bytes: int = 2_000_000  # UTF-8 bytes of all live items' text together
    max_conversation_turns: int = 200


LIMITS = Limits()

# The same limits by the names the face exported before ``LIMITS`` (kept for callers of
# those names; new code reads ``LIMITS``).
MIN_BUDGET = LIMITS.min_budget
MAX_BUDGET = LIMITS.max_budget
MAX_QUERY_CHARS = LIMITS.max_query_chars
MAX_LIVE_ITEMS = LIMITS.max_live_items
MAX_LIVE_BYTES = LIMITS.max_live_bytes
MAX_CONVERSATION_TURNS = LIMITS.max_conversation_turns
