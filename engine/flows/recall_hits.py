"""Recall hits as an agent reads them: each with a line that places it (session, date,
branch, what came of its turn) and the excerpt that answers (``engine.recall.present``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.api import RecallHit, SearchHit
from engine.flows.runtime import Runtime
from engine.recall.present import TurnChunk, excerpt, hit_line, turn_outcome


def turn_outcomes(rt: Runtime, hits: Sequence[SearchHit]) -> dict[int, str]:
    """Chunk id -> what came of its turn (``present.turn_outcome``), read from the chunks
    around it of the same session and turn: one indexed read per source."""
    reach = rt.cfg.recall.turn_reach
    spans: dict[int, tuple[int, int]] = {}
    for h in hits:
        if h.meta.get("turn") is not None:
            lo, hi = spans.get(h.source_id, (h.ordinal, h.ordinal))
            spans[h.source_id] = (min(lo, h.ordinal - reach), max(hi, h.ordinal + reach))
    rows = {sid: rt.vault.neighbours(sid, lo, hi) for sid, (lo, hi) in spans.items()}
    out = {}
    for h in hits:
        turn, session = h.meta.get("turn"), h.meta.get("session")
        same = [TurnChunk(r.kind, bool(r.meta.get("failure")), r.meta.get("error_kind"),
                          r.meta.get("tool"), r.text)
                for r in rows.get(h.source_id, []) if turn is not None
                and r.meta.get("turn") == turn and r.meta.get("session") == session]
        out[h.chunk_id] = turn_outcome(same) if same else "outcome unknown"
    return out


def presented(rt: Runtime, query: str, hits: Sequence[SearchHit],
              drawn: Mapping[int, tuple[int, ...]] | None = None,
              own: Mapping[int, str] | None = None) -> list[RecallHit]:
    """The hits, each with ``line`` (session, date, branch, what came of its turn),
    ``excerpt`` (the lines that answer, within recall.hit_excerpt_tokens) and ``chunks``
    (``drawn``: the chunk ids its text draws on; else its own). A turn hit's excerpt is
    cut from its best chunk's own text (``own``), not from the turn's: the lines that
    share most words with the query are more often elsewhere in a whole turn."""
    outcomes = turn_outcomes(rt, hits)
    budget = rt.cfg.recall.hit_excerpt_tokens
    drawn, own = drawn or {}, own or {}
    return [RecallHit(**h.__dict__, line=hit_line(h.meta, h.time, outcomes[h.chunk_id]),
                      excerpt=excerpt(own.get(h.chunk_id, h.text), query, rt.counter, budget),
                      chunks=drawn.get(h.chunk_id, (h.chunk_id,))) for h in hits]
