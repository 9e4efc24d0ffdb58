"""Validation of build_context inputs: query, budget, live snapshot, conversation.

Every error names the input it is about in ``details.field`` (``query``,
``live[3].kind``...) and never repeats the caller's text or unknown names.
The defaults of these limits are also the wire's (ipc.wire, docs/wire.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from engine.errors import (
    EmptyQuery,
    InvalidBudget,
    InvalidInput,
    InvalidItemKind,
    LiveSnapshotTooLarge,
    NotUtf8,
)
from engine.limits import LIMITS
from engine.retrieval.config import SearchConfig
from engine.types import CHUNK_KINDS, LIVE_KINDS, SOURCE_KINDS, ConversationTurn, LiveItem


def utf8(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise NotUtf8(f"{what} is not valid UTF-8", field=what) from None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string", field=what)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise NotUtf8(f"{what} is not valid UTF-8", field=what) from None
    return value


def check_query(query: Any, cfg: SearchConfig) -> str:
    query = utf8(query, "query")
    if not query.strip():
        raise EmptyQuery("the query is empty", field="query")
    if len(query) > cfg.max_query_chars:
        raise InvalidInput(f"the query is longer than {cfg.max_query_chars} characters",
                           field="query", limit=cfg.max_query_chars)
    return query


def check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidBudget("budget must be an integer", field="budget")
    least, most = LIMITS.min_budget, LIMITS.max_budget
    if budget == 0:
        raise InvalidBudget(f"a budget of 0 tokens gives an empty context: give the most "
                            f"tokens it may use, {least}..{most}", budget=budget,
                            field="budget")
    if not least <= budget <= most:
        raise InvalidBudget(f"budget must be in {least}..{most}", budget=budget,
                            field="budget")
    return budget


SEARCH_KINDS = tuple(dict.fromkeys(SOURCE_KINDS + CHUNK_KINDS))  # a source's or a chunk's


def check_kinds(kinds: Sequence[str] | None) -> tuple[str, ...]:
    """Search's kinds filter: each a source or chunk kind (an unknown one matched nothing
    and read as "no results")."""
    out = tuple(kinds or ())
    for i, kind in enumerate(out):
        if kind not in SEARCH_KINDS:
            raise InvalidInput(f"kinds[{i}]: unknown kind {kind!r}; the kinds are "
                               f"{', '.join(SEARCH_KINDS)}", field=f"kinds[{i}]")
    return out


def _when(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{what} must be epoch seconds or an ISO date",
                               field=what) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    raise InvalidInput(f"{what} must be epoch seconds or an ISO date", field=what)


def check_live(items: Any, cfg: SearchConfig) -> list[LiveItem]:
    """Live items from a context gatherer (``LiveItems`` or whatever else a caller sent),
    validated; errors name the item index only."""
    if items is None:
        return []
    if not isinstance(items, (list, tuple)):
        got = "an object" if isinstance(items, Mapping) else "a single value"
        raise InvalidInput(f"live must be a list of items (objects with kind, source, title, "
                           f"text, captured_at), not {got}", field="live")
    if len(items) > cfg.max_live_items:
        raise LiveSnapshotTooLarge(f"live snapshot has more than {cfg.max_live_items} items",
                                   items=len(items), field="live", limit=cfg.max_live_items)
    out: list[LiveItem] = []
    total = 0
    for i, raw in enumerate(items):
        if isinstance(raw, LiveItem):
            raw = raw.__dict__
        if not isinstance(raw, Mapping):
            raise InvalidInput(f"live[{i}] must be an object", field=f"live[{i}]")
        unknown = set(raw) - {"kind", "source", "title", "text", "captured_at"}
        if unknown:  # counted, never named: the names are the caller's text
            raise InvalidInput(f"live[{i}] has {len(unknown)} unknown field(s); allowed: "
                               "kind, source, title, text, captured_at", field=f"live[{i}]",
                               unknown=len(unknown))
        kind = raw.get("kind", "other")
        if kind not in LIVE_KINDS:
            raise InvalidItemKind(f"live[{i}].kind is not one of {', '.join(LIVE_KINDS)}",
                                  field=f"live[{i}].kind")
        text = utf8(raw.get("text", ""), f"live[{i}].text")
        total += len(text.encode("utf-8"))
        if total > cfg.max_live_bytes:
            raise LiveSnapshotTooLarge(f"live snapshot is over {cfg.max_live_bytes} bytes",
                                       field="live", limit=cfg.max_live_bytes)
        out.append(LiveItem(kind=kind, source=utf8(raw.get("source", ""), f"live[{i}].source"),
                            title=utf8(raw.get("title", ""), f"live[{i}].title"), text=text,
                            captured_at=_when(raw.get("captured_at"), f"live[{i}].captured_at")))
    return out


def check_conversation(turns: Any) -> list[ConversationTurn]:
    """A conversation's turns (``ConversationTurns`` or whatever else a caller sent),
    validated; errors name the turn index only."""
    if turns is None:
        return []
    if not isinstance(turns, (list, tuple)):
        raise InvalidInput("conversation must be a list of turns", field="conversation")
    if len(turns) > LIMITS.max_conversation_turns:
        raise InvalidInput(f"conversation has more than {LIMITS.max_conversation_turns} turns",
                           field="conversation", limit=LIMITS.max_conversation_turns)
    out = []
    for i, raw in enumerate(turns):
        if isinstance(raw, ConversationTurn):
            raw = raw.__dict__
        if not isinstance(raw, Mapping):
            raise InvalidInput(f"conversation[{i}] must be an object",
                               field=f"conversation[{i}]")
        role = utf8(raw.get("role", raw.get("speaker", "user")), f"conversation[{i}].role")
        text = utf8(raw.get("text", raw.get("content", "")), f"conversation[{i}].text")
        out.append(ConversationTurn(role=role, text=text,
                                    time=_when(raw.get("time"), f"conversation[{i}].time")))
    return out
