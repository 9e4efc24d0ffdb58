"""The limits of what a caller may ask, one home for the engine and the wire: ipc/wire.py
reads them from here (through ``from engine import``) rather than keeping copies.

The live and query limits are the [search] section's defaults (a store's config may raise
them for in-process callers; the wire keeps these)."""

from __future__ import annotations

MIN_BUDGET = 1  # tokens a call asks for, at least one (0 would be an empty context)
MAX_BUDGET = 200_000
MAX_QUERY_CHARS = 4_000  # build_context, search: the query analyzer reads no more
MAX_LIVE_ITEMS = 64
MAX_LIVE_BYTES = 2_000_000  # UTF-8 bytes of all live items' text together
MAX_CONVERSATION_TURNS = 200
