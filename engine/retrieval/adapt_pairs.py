"""Training pairs from the user's own sessions: what was asked, and what answered it.

No labels: a session says by its order what answered what. From the chunks of a
session (session order) come

- ``request``: a request (the ``User:`` line a turn's chunks quote) -> the turn's first
  and last reply and its first tool calls;
- ``intent``: the words before a tool call (its ``Assistant:`` line) -> the call;
- ``summary``: the session's first request -> its last reply (the closing summary);
- ``diagnosis``: a failure -> the next reply or reasoning that followed it (the query
  side is the failure's own stored vector: no text to embed).

The query side of the first three is text the embedder reads once (at most
``texts_per_session`` a session, the requests first); the document side is always a
stored chunk vector. Term pairs (a request's words, the words of what answered it,
the quoted request left out) feed the term table. Pure: plain data in, plain data out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_USER = re.compile(r"^User: (.*?)(?:\n(?:Assistant|Tool )|\Z)", re.DOTALL)
_INTENT = re.compile(r"^Assistant: (.*?)\nTool ", re.MULTILINE | re.DOTALL)
REPLIES_PER_TURN = 2  # a turn's first and last reply
TOOLS_PER_TURN = 2  # a turn's first tool calls


@dataclass(frozen=True)
class SessionPiece:
    """What the pairs read of a stored transcript chunk."""

    id: int
    session: str
    turn: int | None
    kind: str  # turn_pair, thinking, code, tool
    failure: bool
    text: str


@dataclass(frozen=True)
class QueryText:
    """A text to embed for the query side: ``key`` (chunk id, role) names it in the vault."""

    chunk_id: int
    role: str  # "request" or "intent"
    text: str


@dataclass
class Pairs:
    """The pairs of some sessions: (query key, document chunk id, session index, kind)."""

    texts: list[QueryText]
    text_pairs: list[tuple[tuple[int, str], int, int, str]]
    chunk_pairs: list[tuple[int, int, int, str]]  # query chunk id (its stored vector)
    term_pairs: list[tuple[str, str]]
    sessions: int


def request_of(text: str) -> str:
    """The request a chunk quotes (its ``User:`` line), or ""."""
    m = _USER.match(text)
    return m.group(1).strip() if m else ""


def intent_of(text: str) -> str:
    """The words before a tool call that a tool chunk quotes, or ""."""
    m = _INTENT.search(text)
    return m.group(1).strip() if m else ""


def answer_text(text: str) -> str:
    """A chunk's text without the request it quotes."""
    req = _USER.match(text)
    return text[len("User: ") + len(req.group(1)):] if req else text


def _spread(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (all of them when k >= n)."""
    if k >= n:
        return list(range(n))
    return sorted({round(i * (n - 1) / max(1, k - 1)) for i in range(k)})


def session_pairs(pieces: Sequence[SessionPiece], texts_per_session: int) -> Pairs:
    """The pairs of sessions given as their chunks, each session's in its order."""
    out = Pairs([], [], [], [], 0)
    by_session: dict[str, list[SessionPiece]] = {}
    for p in pieces:
        by_session.setdefault(p.session, []).append(p)
    for sidx, chunks in enumerate(by_session.values()):
        out.sessions += 1
        _one_session(chunks, sidx, texts_per_session, out)
    return out


def _one_session(chunks: list[SessionPiece], sidx: int, budget: int, out: Pairs) -> None:
    turns: dict[int | None, list[SessionPiece]] = {}
    for c in chunks:
        turns.setdefault(c.turn, []).append(c)
    asked: list[tuple[SessionPiece, str, list[int]]] = []  # (quoting chunk, request, docs)
    for members in turns.values():
        first = next((c for c in members if request_of(c.text)), None)
        if first is None:
            continue
        request = request_of(first.text)
        replies = [c.id for c in members if c.kind == "turn_pair"]
        tools = [c.id for c in members if c.kind == "tool"][:TOOLS_PER_TURN]
        docs = list(dict.fromkeys([*replies[:1], *replies[-1:], *tools]))
        if docs:
            asked.append((first, request, docs))
            answer = "\n".join(answer_text(c.text) for c in members)
            out.term_pairs.append((request, answer))
    chosen = _spread(len(asked), budget)
    for i in chosen:
        first, request, docs = asked[i]
        out.texts.append(QueryText(first.id, "request", request))
        out.text_pairs.extend(((first.id, "request"), d, sidx, "request") for d in docs)
    pair_chunks = [c for c in chunks if c.kind == "turn_pair"]
    if asked and pair_chunks and asked[0][0].turn != pair_chunks[-1].turn:
        first = asked[0][0]
        if 0 not in chosen:
            out.texts.append(QueryText(first.id, "request", asked[0][1]))
        out.text_pairs.append(((first.id, "request"), pair_chunks[-1].id, sidx, "summary"))
    left = budget - len(chosen)
    tool_chunks = [c for c in chunks if c.kind == "tool" and intent_of(c.text)]
    for i in _spread(len(tool_chunks), max(0, left)) if left > 0 else []:
        t = tool_chunks[i]
        out.texts.append(QueryText(t.id, "intent", intent_of(t.text)))
        out.text_pairs.append(((t.id, "intent"), t.id, sidx, "intent"))
    for i, c in enumerate(chunks):
        if c.failure:
            nxt = next((d for d in chunks[i + 1:] if d.kind in ("turn_pair", "thinking")), None)
            if nxt is not None:
                out.chunk_pairs.append((c.id, nxt.id, sidx, "diagnosis"))
