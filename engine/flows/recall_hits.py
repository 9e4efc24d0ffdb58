"""Recall hits as an agent reads them: each with a line that places it (session, date,
branch, what came of its turn) and the excerpt that answers (``engine.recall.present``).

With a token budget (an agent's tool result), the engine sizes the excerpts so that the
hits together stay within it (``excerpt_shares``): every hit gets an equal share, a hit
whose whole text is shorter gives the rest of its share to the others, and hits that
would get less than ``MIN_EXCERPT`` tokens are left out. Without one, each excerpt is
``recall.hit_excerpt_tokens`` long.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.api import RecallHit, SearchHit
from engine.flows.runtime import Runtime
from engine.recall.present import TurnChunk, excerpt, hit_line, turn_outcome

# Tokens a front end spends on a hit besides its line and excerpt (its number, kind and
# line breaks: "10. [turn_pair] " and two newlines are 7 cl100k tokens). Hand-set.
HIT_OVERHEAD = 8
# The shortest excerpt worth showing: a hit that would get less is left out. Hand-set
# (about two lines of a reply or one command with the start of its output).
MIN_EXCERPT = 24


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


def excerpt_shares(sizes: Sequence[int], lines: Sequence[int], budget: int) -> list[int]:
    """Each hit's excerpt tokens within ``budget`` for hits whose whole texts take
    ``sizes`` tokens and whose lines take ``lines`` (best first): equal shares of what
    the lines and ``HIT_OVERHEAD`` leave, a hit shorter than its share keeping only what
    it needs (max-min fair). Fewer entries than hits when the last ones would get under
    ``MIN_EXCERPT``: they are left out."""
    n = len(sizes)
    while n:
        room = budget - sum(lines[:n]) - HIT_OVERHEAD * n
        if room >= MIN_EXCERPT * n:
            break
        n -= 1
    if not n:
        return []
    out = [0] * n
    left = room
    for done, i in enumerate(sorted(range(n), key=lambda j: sizes[j])):
        share = left // (n - done)
        out[i] = min(sizes[i], share)
        left -= out[i]
    return out


def _excerpt_within(rt: Runtime, query: str, hit: SearchHit, own: str | None,
                    tokens: int) -> str:
    """A hit's excerpt in ``tokens``: its whole text when it fits; a turn hit's text
    (request, then its best chunks) from the start when its best chunk fits; else the
    lines of its best chunk (``own``) that answer best."""
    counter = rt.counter
    if counter.count(hit.text) <= tokens:
        return hit.text
    if own is not None and counter.count(own) <= tokens:
        return counter.truncate(hit.text, tokens)
    return excerpt(own if own is not None else hit.text, query, counter, tokens)


def presented(rt: Runtime, query: str, hits: Sequence[SearchHit],
              drawn: Mapping[int, tuple[int, ...]] | None = None,
              own: Mapping[int, str] | None = None,
              budget: int | None = None) -> list[RecallHit]:
    """The hits, each with ``line`` (session, date, branch, what came of its turn),
    ``excerpt`` (the lines that answer) and ``chunks`` (``drawn``: the chunk ids its text
    draws on; else its own). A turn hit's excerpt is cut from its best chunk's own text
    (``own``), not from the turn's: the lines that share most words with the query are
    more often elsewhere in a whole turn. Excerpts are recall.hit_excerpt_tokens long,
    or with ``budget`` sized so that all the hits fit in it (``excerpt_shares``; hits
    that would not fit are left out)."""
    outcomes = turn_outcomes(rt, hits)
    drawn, own = drawn or {}, own or {}
    lines = [hit_line(h.meta, h.time, outcomes[h.chunk_id]) for h in hits]
    if budget is None:
        tokens = [rt.cfg.recall.hit_excerpt_tokens] * len(hits)
    else:
        tokens = excerpt_shares([rt.counter.count(h.text) for h in hits],
                                [rt.counter.count(line) for line in lines], budget)
    return [RecallHit(**h.__dict__, line=line,
                      excerpt=_excerpt_within(rt, query, h, own.get(h.chunk_id), n)
                      if budget is not None else
                      excerpt(own.get(h.chunk_id, h.text), query, rt.counter, n),
                      chunks=drawn.get(h.chunk_id, (h.chunk_id,)))
            for h, line, n in zip(hits, lines, tokens)]  # zip: hits left out by the budget


def shown_tokens(rt: Runtime, hits: Sequence[RecallHit]) -> int:
    """What ``hits`` take as a budget counts them: line, excerpt and ``HIT_OVERHEAD``."""
    return sum(rt.counter.count(h.line) + rt.counter.count(h.excerpt) + HIT_OVERHEAD
               for h in hits)
