"""Recall hits as an agent reads them: each with a line that places it (session, date,
branch, what came of its turn) and the excerpt that answers (``engine.recall.present``).

With a token budget (an agent's tool result), the engine sizes the excerpts so that the
hits together, as an agent reads them (``RecallHit.entry``, ``RecallResult.omitted_note``),
stay within it (``excerpt_shares``): every hit gets an equal share, a hit
whose whole text is shorter gives the rest of its share to the others, and hits that
would get less than ``MIN_EXCERPT`` tokens are left out (room is kept for saying so).
Without one, each excerpt is ``recall.hit_excerpt_tokens`` long. A call's hit shown with
its answering part (``engine.flows.recall.parts``) gives that part's lines up to
``recall.part_share`` of its excerpt, the call's own lines the rest. Either way a line whose
words an earlier hit of the same session already shows (the request each chunk of a turn
quotes, the words before a tool call that the reply before it holds) is not shown again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.api import RecallHit, SearchHit
from engine.api.results import HIT_OVERHEAD, OMITTED_NOTE
from engine.flows.recall.parts import line_weigher, term_weights
from engine.flows.runtime import Runtime
from engine.recall.present import (
    MIN_LINE,
    TurnChunk,
    Weigher,
    excerpt,
    hit_line,
    own_lines,
    part_lines,
    turn_outcome,
)
from engine.retrieval.query import analyze_query
from engine.tokens import TokenCounter

# A line of at least this many characters that an earlier hit shows is not shown again
# (shorter ones, "Result: ok" or a brace, may repeat). Hand-set.
REPEAT_CHARS = 24
# How much of what a session's earlier hits showed is looked through (the last part of
# it): the look is linear in it, and k may be 1000. Hand-set (about 30 full chunks).
SHOWN_CHARS = 64_000
# The shortest excerpt worth showing: a hit that would get less is left out. Hand-set
# (about two lines of a reply or one command with the start of its output).
MIN_EXCERPT = 24


def turn_outcomes(rt: Runtime, hits: Sequence[SearchHit]) -> dict[int, str]:
    """Chunk id -> what came of its turn (``present.turn_outcome``), read from the chunks
    around it of the same session and turn: one indexed read per source. The work a
    session file holds before its first request (a file that starts mid-task) has no
    turn number: it is read as one turn too. Only what the outcome reads is read
    (``Vault.turn_outcome_rows``: the meta's fields in SQL, a reply's text)."""
    reach = rt.cfg.recall.turn_reach
    spans: dict[int, tuple[int, int]] = {}
    turns: dict[int, list[Any]] = {}
    for h in hits:
        if h.meta.get("session") is not None:
            lo, hi = spans.get(h.source_id, (h.ordinal, h.ordinal))
            spans[h.source_id] = (min(lo, h.ordinal - reach), max(hi, h.ordinal + reach))
            turns.setdefault(h.source_id, []).append(h.meta.get("turn"))
    rows = {sid: rt.vault.turn_outcome_rows(sid, lo, hi, turns[sid])
            for sid, (lo, hi) in spans.items()}
    out = {}
    for h in hits:
        turn, session = h.meta.get("turn"), h.meta.get("session")
        same = [TurnChunk(kind, failure, error_kind, tool, text)
                for r_session, r_turn, kind, failure, error_kind, tool, text
                in rows.get(h.source_id, []) if session is not None
                and r_turn == turn and r_session == session]
        out[h.chunk_id] = turn_outcome(same) if same else "outcome unknown"
    return out


def excerpt_shares(sizes: Sequence[int], lines: Sequence[int], budget: int) -> list[int]:
    """Each hit's excerpt tokens within ``budget`` for hits whose whole texts take
    ``sizes`` tokens and whose lines take ``lines`` (best first): equal shares of what
    the lines and ``HIT_OVERHEAD`` leave, a hit shorter than its share keeping only what
    it needs (max-min fair). Fewer entries than hits when the last ones would get under
    ``MIN_EXCERPT``: they are left out, and ``OMITTED_NOTE`` is kept for saying so."""
    n = len(sizes)
    while n:
        note = OMITTED_NOTE if n < len(sizes) else 0
        room = budget - sum(lines[:n]) - HIT_OVERHEAD * n - note
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


def _cut(counter: TokenCounter, text: str, tokens: int) -> str:
    """``text`` cut to ``tokens`` tokens, an ellipsis marking the cut."""
    out = counter.truncate(text, max(1, tokens - 1)).rstrip() + "…"
    return out if counter.count(out) <= tokens else counter.truncate(text, tokens)


def _excerpt_within(counter: TokenCounter, query: str, text: str, own: str | None,
                    tokens: int) -> str:
    """A hit's excerpt in ``tokens``: its whole ``text`` when it fits; a turn hit's text
    (the request, then its best chunk ``own``, then the next ones) from its start when
    the request and that chunk fit; else the lines of ``own`` (or of a chunk hit's text)
    that answer best."""
    if counter.count(text) <= tokens:
        return text
    if own is not None:
        body = own_lines(own).strip("\n")
        at = text.find(body) if body else -1
        if at >= 0 and counter.count(text[: at + len(body)]) <= tokens:
            return _cut(counter, text, tokens)
        return excerpt(own, query, counter, tokens)
    return excerpt(text, query, counter, tokens)


def _flat(text: str) -> str:
    """``text`` with its runs of whitespace made one space, and no ellipsis at its end."""
    return " ".join(text.split()).rstrip("…").rstrip()


def _holds(shown: str, flat: str) -> bool:
    """Whether ``shown`` holds ``flat`` as whole words (``app.ts`` is not in ``app.tsx``)."""
    at = shown.find(flat)
    while at >= 0:
        end = at + len(flat)
        if (at == 0 or shown[at - 1].isspace()) and (end == len(shown) or shown[end].isspace()):
            return True
        at = shown.find(flat, at + 1)
    return False


def _unshown(text: str, shown: str) -> str:
    """``text`` less the lines that earlier hits' excerpts (``shown``: each flattened, one
    a line) already hold as whole words: the request each chunk of a turn quotes, the
    words before a tool call that the reply before it holds (one line there, several
    here). Lines under ``REPEAT_CHARS`` stay; all of ``text`` when no line of that size
    would be left."""
    kept = [ln for ln in text.split("\n")
            if len(flat := _flat(ln)) < REPEAT_CHARS or not _holds(shown, flat)]
    if not any(len(_flat(ln)) >= REPEAT_CHARS for ln in kept):
        return text
    return "\n".join(kept)


def _with_part(rt: Runtime, query: str, call: str, lines: str, tokens: int,
               budgeted: bool, weigher: Weigher | None = None) -> str:
    """A call hit's excerpt in ``tokens`` when its text is the call's own (``call``) and
    then its answering part's ``lines``: both whole when they fit, else the part's best
    lines (``weigher``: by ``part_lines``' weighed terms) in at most ``recall.part_share``
    of the room and the call's in the rest."""
    counter = rt.counter

    def cut(text: str, n: int) -> str:
        return (_excerpt_within(counter, query, text, None, n) if budgeted
                else excerpt(text, query, counter, n))

    whole = f"{call}\n{lines}" if lines.strip() else call
    if counter.count(whole) <= tokens:
        return whole
    if not lines.strip():  # an earlier hit of its session shows them
        return cut(call, tokens)
    room = min(counter.count(lines), max(1, int(tokens * rt.cfg.recall.part_share)))
    part = part_lines(lines, query, counter, room, call, weigher)
    out = f"{cut(call, max(1, tokens - room - 1))}\n{part}"
    while counter.count(out) > tokens:  # joins can merge tokens: never past the room
        out = counter.truncate(out, tokens)
    return out


def presented(rt: Runtime, query: str, hits: Sequence[SearchHit],
              drawn: Mapping[int, tuple[int, ...]] | None = None,
              own: Mapping[int, str] | None = None,
              budget: int | None = None, once: bool = True,
              parts: Mapping[int, str] | None = None,
              weigher: Weigher | None = None) -> list[RecallHit]:
    """The hits, each with ``line`` (session, date, branch, what came of its turn),
    ``excerpt`` (the lines that answer) and ``chunks`` (``drawn``: the chunk ids its text
    draws on; else its own). A turn hit's excerpt is cut from its best chunk's own text
    (``own``), not from the turn's: the lines that share most words with the query are
    more often elsewhere in a whole turn. A call hit whose text ends with its answering
    part's lines (``parts``) shows some of both (``_with_part``; its lines cut again by
    ``weigher``, the one ``recall_hits`` chose them by, else made here from the query).
    With ``once``, a line
    that an earlier hit of the same session shows in its excerpt is not shown again
    (``_unshown``; a caller that picks among the hits afterwards, as the digest's packer
    does, passes False).
    Excerpts are recall.hit_excerpt_tokens long, or with ``budget`` sized so that all
    the hits fit in it (``excerpt_shares``; hits that would not fit are left out: fewer
    hits come back); then, with ``recall.budget_fill``, what the excerpts leave of their
    room is given to the ones that were cut (``_filled``)."""
    outcomes = turn_outcomes(rt, hits)
    drawn, own, parts = drawn or {}, own or {}, parts or {}
    counter = rt.counter
    lines = [hit_line(h.meta, h.time, outcomes[h.chunk_id]) for h in hits]
    if budget is None:
        tokens = [rt.cfg.recall.hit_excerpt_tokens] * len(hits)
    else:
        tokens = excerpt_shares([counter.count(h.text) for h in hits],
                                [counter.count(line) for line in lines], budget)
    if weigher is None and parts and rt.cfg.recall.part_lines_by == "weight":
        weights = term_weights(rt, analyze_query(query, rt.cfg.query))
        weigher = line_weigher(weights, rt.cfg.query.stopwords)
    memo: dict[tuple[int, int, str], tuple[str, bool]] = {}

    def one(i: int, n: int, seen: str) -> tuple[str, bool]:
        """Hit ``i``'s excerpt in ``n`` tokens after its session's ``seen``, and whether
        it is all the hit has to show."""
        h = hits[i]
        best = own.get(h.chunk_id)
        text = _unshown(h.text, seen) if once else h.text
        mine = best if best is None or not once else _unshown(best, seen)
        tail = parts.get(h.chunk_id)
        if tail is not None and h.text.endswith(f"\n{tail}"):
            call = h.text[: -len(tail) - 1]
            call, tail = (_unshown(call, seen), _unshown(tail, seen)) if once else (call, tail)
            cut = _with_part(rt, query, call, tail, n, budget is not None, weigher)
            return cut, cut == (f"{call}\n{tail}" if tail.strip() else call)
        if budget is None:
            cut = excerpt(mine if mine is not None else text, query, counter, n)
        else:
            cut = _excerpt_within(counter, query, text, mine, n)
        return cut, cut == text

    def render(allot: Sequence[int]) -> list[tuple[str, bool]]:
        """Every hit's excerpt within its ``allot`` tokens, best first (a later hit of a
        session less what the earlier ones show)."""
        shown: dict[object, str] = {}  # per session (the same words elsewhere are news)
        got = []
        for i, n in enumerate(allot):
            h = hits[i]
            where = h.meta.get("session") or ("source", h.source_id)
            seen = shown.get(where, "")
            if (i, n, seen) not in memo:
                memo[i, n, seen] = one(i, n, seen)
            got.append(memo[i, n, seen])
            shown[where] = f"{seen}\n{_flat(got[-1][0])}"[-SHOWN_CHARS:]
        return got

    cuts = render(tokens)
    fill = rt.cfg.recall.budget_fill
    if budget is not None and fill != "none" and cuts:
        cuts = _filled(counter.count, cuts, tokens, sum(tokens), render, fill)
    return [RecallHit(**h.__dict__, line=line, excerpt=cut,
                      chunks=drawn.get(h.chunk_id, (h.chunk_id,)))
            for h, line, (cut, _) in zip(hits, lines, cuts)]  # zip: the budget's left-outs end it


def _filled(count: Callable[[str], int], cuts: list[tuple[str, bool]], tokens: Sequence[int],
            room: int, render: Callable[[Sequence[int]], list[tuple[str, bool]]], fill: str
            ) -> list[tuple[str, bool]]:
    """``cuts`` (each hit's excerpt within its ``tokens``, and whether it is whole) again,
    the tokens they leave of their ``room`` given to the hits that were cut: all to the
    best ranked first ("best"), or in equal shares ("even"). Each excerpt stays within
    its allotment, and a new set of excerpts is taken only when all of them together
    stay within ``room`` (a hit shown longer can change what a later hit of its session
    shows): never past the budget. ``count``: a text's tokens."""
    allot = list(tokens)
    used = [count(c) for c, _ in cuts]

    def take(trial: list[int]) -> bool:
        nonlocal cuts, used, allot
        for _ in range(3):  # a later hit of the session may take more: give back as much
            got = render(trial)
            took = [count(c) for c, _ in got]
            over = sum(took) - room
            if over <= 0:
                if got == cuts:
                    return False
                cuts, used, allot = got, took, trial
                return True
            grown = [i for i in range(len(trial)) if trial[i] > allot[i]]
            for i in reversed(grown):  # the lowest ranked gives back first
                back = min(over, trial[i] - allot[i])
                trial[i] -= back
                over -= back
            if trial == allot:
                return False
        return False

    if fill == "best":
        for i in range(len(cuts)):
            left = room - sum(used)
            if left < MIN_LINE:
                break
            if not cuts[i][1] and used[i] + left > allot[i]:
                take([used[i] + left if j == i else a for j, a in enumerate(allot)])
        return cuts
    for _ in range(3):  # "even": equal shares of what is left, a few rounds
        left = room - sum(used)
        grow = [i for i, (_, whole) in enumerate(cuts) if not whole]
        if left < MIN_LINE or not grow:
            break
        share = left // len(grow)
        trial = [max(a, used[i] + share) if i in grow else a for i, a in enumerate(allot)]
        if not take(trial):
            break
    return cuts


def shown_tokens(rt: Runtime, hits: Sequence[RecallHit], omitted: int) -> int:
    """What ``hits`` take as a budget counts them: line, excerpt and ``HIT_OVERHEAD``
    each, and ``OMITTED_NOTE`` when ``omitted`` hits were left out beside them."""
    return sum(rt.counter.count(h.line) + rt.counter.count(h.excerpt) + HIT_OVERHEAD
               for h in hits) + (OMITTED_NOTE if omitted and hits else 0)
