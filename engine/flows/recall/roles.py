"""Recall's preference for the chunk of the role a question asks for (the closing
summary, a call's result, the call, a tool it names, the diagnosis of a failure:
``engine.retrieval.turn_roles``),
applied to the ranked chunks after the rerank (``recall.turn_roles``), each of a
session's words read once (``apart``: the copies of a reply's words that its calls quote
come after the next different chunk), and, within a turn, the chunk that answers the
question's ask before those that restate its context (``toward_ask``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult
from engine.flows.search.ranking import Ranked, window_vectors
from engine.retrieval.config import TurnRoleConfig
from engine.retrieval.turn_roles import (
    RoleChunk,
    ask_shortfalls,
    assistant_words,
    call_commands,
    context_and_ask,
    repeat_penalties,
    role_bonuses,
    said,
)
from engine.store.vault.core import ChunkRow


def _role_chunk(row: ChunkRow, cfg: TurnRoleConfig, cause: bool) -> RoleChunk:
    session, tool, part = row.meta.get("session"), row.meta.get("tool"), row.meta.get("part")
    part = part if isinstance(part, str) else None
    tool = tool if isinstance(tool, str) else None
    return RoleChunk(kind=row.kind, session=session if isinstance(session, str) else None,
                     ordinal=row.ordinal, tool=tool,
                     part=part, commands=(call_commands(row.kind, row.text, tool, part)
                                          if cfg.shown_bonus else frozenset()),
                     diagnosis=cause and cfg.says_cause(assistant_words(row.kind, row.text,
                                                                        part)))


def preferred(query: str, ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow],
              cfg: TurnRoleConfig) -> list[Ranked]:
    """``ranked`` with each chunk's role bonus added to its score, sorted again (stable);
    unchanged when the question asks for no role. A chunk is read for a cause only among
    the first ``cfg.cause_reach``."""
    if not cfg.on:
        return list(ranked)
    known = [(cid, score, feats) for cid, score, feats in ranked if cid in rows]
    tools = {t for cid, _, _ in known
             if isinstance(t := rows[cid].meta.get("tool"), str)}
    if not cfg.wanted(query, tools):
        return list(ranked)
    cause = bool(cfg.asks(query).get("cause") and cfg.cause_bonus)
    bonus = role_bonuses(query, [_role_chunk(rows[cid], cfg, cause and i < cfg.cause_reach)
                                 for i, (cid, _, _) in enumerate(known)], cfg)
    if not any(bonus):
        return list(ranked)
    out = [(cid, score + b, feats) for (cid, score, feats), b in zip(known, bonus, strict=True)]
    out += [r for r in ranked if r[0] not in rows]
    return sorted(out, key=lambda r: -r[1])


def apart(ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow], cfg: TurnRoleConfig
          ) -> list[Ranked]:
    """``ranked`` with each chunk lowered by ``cfg.repeat_penalty`` for every better chunk
    of its session that leads with the same assistant words (``turn_roles.said``), sorted
    again (stable); unchanged when the penalty is 0."""
    if not cfg.repeat_penalty:
        return list(ranked)
    keys = []
    for cid, _, _ in ranked:
        row = rows.get(cid)
        session = row.meta.get("session") if row is not None else None
        keys.append((session if isinstance(session, str) else None,
                     said(row.kind, row.text) if row is not None else None))
    less = repeat_penalties(keys, cfg.repeat_penalty)
    if not any(less):
        return list(ranked)
    out = [(cid, score - d, feats) for (cid, score, feats), d in zip(ranked, less, strict=True)]
    return sorted(out, key=lambda r: -r[1])


def turn_key(row: ChunkRow) -> Hashable:
    """The turn a chunk belongs to: (session, turn); a chunk of no known turn is one."""
    session, turn = row.meta.get("session"), row.meta.get("turn")
    if isinstance(session, str) and isinstance(turn, int) and not isinstance(turn, bool):
        return (session, turn)
    return ("chunk", row.id)


def _turn_of(row: ChunkRow | None) -> Hashable | None:
    """A whole chunk's turn (``turn_key``); None for a part of a call or request (kept
    out of the vector lane, its vector its first line) or a chunk of no known turn."""
    if row is None or row.meta.get("part"):
        return None
    key = turn_key(row)
    return None if key == ("chunk", row.id) else key


def toward_ask(rt: Runtime, query: str, ranked: Sequence[Ranked], res: LaneResult,
               cfg: TurnRoleConfig) -> list[Ranked]:
    """``ranked`` with each of its first ``cfg.ask_reach`` chunks lowered by
    ``turn_roles.ask_shortfalls`` when the question opens with a context clause
    (``context_and_ask``): within a turn, the chunks that lean less to the ask than to the
    context come after the one that leans most; sorted again (stable). Unchanged when
    ``cfg.ask_weight`` is 0 or the question has no context clause. Costs two query
    embeddings and the vectors of the chunks read."""
    split = context_and_ask(query) if cfg.ask_weight else None
    if split is None:
        return list(ranked)
    head = list(ranked[: cfg.ask_reach])
    groups = [_turn_of(res.rows.get(cid)) for cid, _, _ in head]
    vectors = window_vectors(rt, res, [cid for (cid, _, _), g in zip(head, groups, strict=True)
                                       if g is not None], res.rows)
    context, ask = (np.asarray(rt.embed_query(t), dtype=np.float32) for t in split)
    leans: list[float | None] = []
    for cid, _, _ in head:
        v = vectors.get(cid)
        ok = v is not None and v.shape == ask.shape
        leans.append(float(np.asarray(v, dtype=np.float32) @ (ask - context)) if ok else None)
    less = ask_shortfalls(groups, leans, cfg.ask_weight)
    if not any(less):
        return list(ranked)
    out = [(cid, score - d, feats) for (cid, score, feats), d in zip(head, less, strict=True)]
    return sorted(out + list(ranked[cfg.ask_reach:]), key=lambda r: -r[1])
