"""Validation of build_context inputs: query, budget, live snapshot, conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from engine.config import SearchConfig
from engine.errors import (
    EmptyQuery,
    InvalidBudget,
    InvalidInput,
    InvalidItemKind,
    LiveSnapshotTooLarge,
    NotUtf8,
)
from engine.packing.packer import MAX_BUDGET
from engine.types import LIVE_KINDS, ConversationTurn, LiveItem


def utf8(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise NotUtf8(f"{what} is not valid UTF-8") from None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise NotUtf8(f"{what} is not valid UTF-8") from None
    return value


def check_query(query: Any, cfg: SearchConfig) -> str:
    query = utf8(query, "query")
    if not query.strip():
        raise EmptyQuery("the query is empty")
    if len(query) > cfg.max_query_chars:
        raise InvalidInput(f"the query is longer than {cfg.max_query_chars} characters")
    return query


def check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidBudget("budget must be an integer")
    if not 0 <= budget <= MAX_BUDGET:
        raise InvalidBudget(f"budget must be in 0..{MAX_BUDGET}", budget=budget)
    return budget


def _when(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{what} must be epoch seconds or an ISO date") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    raise InvalidInput(f"{what} must be epoch seconds or an ISO date")


def check_live(items: Sequence[Mapping[str, Any]] | None, cfg: SearchConfig) -> list[LiveItem]:
    """Live items from a context gatherer, validated; errors name the item index only."""
    if items is None:
        return []
    if not isinstance(items, (list, tuple)):
        raise InvalidInput("live must be a list of items")
    if len(items) > cfg.max_live_items:
        raise LiveSnapshotTooLarge(f"live snapshot has more than {cfg.max_live_items} items",
                                   items=len(items))
    out: list[LiveItem] = []
    total = 0
    for i, raw in enumerate(items):
        if isinstance(raw, LiveItem):
            raw = raw.__dict__
        if not isinstance(raw, Mapping):
            raise InvalidInput(f"live[{i}] must be an object")
        unknown = set(raw) - {"kind", "source", "title", "text", "captured_at"}
        if unknown:
            raise InvalidInput(f"live[{i}] has unknown fields", fields=sorted(unknown))
        kind = raw.get("kind", "other")
        if kind not in LIVE_KINDS:
            raise InvalidItemKind(f"live[{i}].kind is not one of {', '.join(LIVE_KINDS)}")
        text = utf8(raw.get("text", ""), f"live[{i}].text")
        total += len(text.encode("utf-8"))
        if total > cfg.max_live_bytes:
            raise LiveSnapshotTooLarge(f"live snapshot is over {cfg.max_live_bytes} bytes")
        out.append(LiveItem(kind=kind, source=utf8(raw.get("source", ""), f"live[{i}].source"),
                            title=utf8(raw.get("title", ""), f"live[{i}].title"), text=text,
                            captured_at=_when(raw.get("captured_at"), f"live[{i}].captured_at")))
    return out


def check_conversation(turns: Sequence[Mapping[str, Any]] | None) -> list[ConversationTurn]:
    if turns is None:
        return []
    if not isinstance(turns, (list, tuple)):
        raise InvalidInput("conversation must be a list of turns")
    if len(turns) > 200:
        raise InvalidInput("conversation has more than 200 turns")
    out = []
    for i, raw in enumerate(turns):
        if not isinstance(raw, Mapping):
            raise InvalidInput(f"conversation[{i}] must be an object")
        role = utf8(raw.get("role", raw.get("speaker", "user")), f"conversation[{i}].role")
        text = utf8(raw.get("text", raw.get("content", "")), f"conversation[{i}].text")
        out.append(ConversationTurn(role=role, text=text,
                                    time=_when(raw.get("time"), f"conversation[{i}].time")))
    return out
