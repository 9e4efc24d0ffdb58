"""Recall's query: the chunks ranked for it, returned as chunks or as turns.

The ranking is the one search ranks with (the transcript profile, the best sessions
expanded into the window; each chunk also scored by its turn, ``transcript_rank``).
What a hit is, ``recall.hit_unit`` says:

- ``turn``: the ranked chunks grouped by the turn they belong to (one request of a
  session and everything that answered it), best turn first, each one hit named by
  its best chunk, whose text is the turn's (``present.compose_turn``: the request,
  then its best chunks) within ``recall.turn_hit_tokens``;
- ``chunk`` (the default): the best ``k`` chunks, each its own hit; a call's hit carries
  the best lines of its answering part (``parts.shown_with_parts``, ``recall.part_lines``),
  and that part takes no slot of its own.

A turn hit answers more of the benchmark's questions in its text at 5 hits, but it
reads about twice the tokens of 5 chunk hits, the same as 10 chunk hits, which answer
about as often; and its excerpt (what the CLI and MCP print) answers less often than the
excerpts of 5 chunk hits (``bench/recall_quality.py``, dev split; see the README).
The chunk kinds stay facets either way: only chunks of the asked kinds are ranked,
so only they make up a turn's text.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from engine.api import SearchHit
from engine.flows.recall.adapt import query_adapter
from engine.flows.recall.parts import (
    demoted,
    is_part,
    line_weigher,
    shown_with_parts,
    term_weights,
    whole_parts,
)
from engine.flows.recall.roles import apart, preferred, toward_ask, turn_key
from engine.flows.runtime import Runtime
from engine.flows.search.lanes import to_hit
from engine.flows.search.ranking import Ranked, rank_query
from engine.metrics import QUERY_MS
from engine.recall.present import Weigher, compose_turn, part_lines
from engine.store.vault.rows import ChunkRow, Filters


def group_turns(ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow], k: int
                ) -> list[list[tuple[int, float]]]:
    """The first ``k`` turns of ``ranked`` in the order of their best chunks, each as its
    chunks' (id, score), best first."""
    turns: dict[Hashable, list[tuple[int, float]]] = {}
    for cid, score, _ in ranked:
        row = rows.get(cid)
        if row is None:
            continue
        key = turn_key(row)
        if key not in turns:
            if len(turns) >= k:
                continue
            turns[key] = []
        turns[key].append((row.id, score))
    return list(turns.values())


def recall_hits(rt: Runtime, query: str, k: int, filters: Filters,
                project: str | None = None
                ) -> tuple[list[SearchHit], dict[int, tuple[int, ...]], dict[int, str],
                           dict[int, str], Weigher | None]:
    """The ``k`` best hits for ``query`` (chunks or turns, ``recall.hit_unit``); for each
    hit's chunk id, the chunk ids its text draws on (best first), for a turn hit its
    best chunk's own text, and for a call hit shown with its answering part the part's
    lines that end its text (``recall.hit_excerpt_tokens`` of them: ``part_lines``),
    and the weigher those lines were chosen by (``recall.part_lines_by`` "weight"; None:
    by words), which ``presented`` cuts them again with. ``project``: the project the
    query is asked from."""
    res, ranked, timer = rank_query(rt, query, k, filters=filters, expand_session=True,
                                    adapter=lambda plan: query_adapter(rt, plan.analysis.words),
                                    project=project,
                                    vector_keeps=None if rt.cfg.recall.part_vector
                                    else lambda row: not is_part(row))
    lanes = {cid: ranks for cid, _, ranks in res.fused}
    hits: list[SearchHit] = []
    drawn: dict[int, tuple[int, ...]] = {}
    own: dict[int, str] = {}
    shown_parts: dict[int, str] = {}
    weigher: Weigher | None = None
    ranked = demoted(ranked, res.rows, rt.cfg.recall.part_penalty)
    ranked = preferred(query, ranked, res.rows, rt.cfg.recall.turn_roles)
    ranked = toward_ask(rt, query, ranked, res, rt.cfg.recall.turn_roles)
    ranked = apart(ranked, res.rows, rt.cfg.recall.turn_roles)
    if rt.cfg.recall.hit_unit == "chunk":
        cfg = rt.cfg.recall
        top, answering = (shown_with_parts(ranked, res.rows, k, res.analysis.terms,
                                           rt.cfg.query.stopwords)
                          if cfg.part_lines else (ranked[:k], {}))
        part_rows: Mapping[int, ChunkRow] = res.rows
        weights = (term_weights(rt, res.analysis) if cfg.part_lines and (
            cfg.part_from == "call" or cfg.part_lines_by == "weight") else {})
        if cfg.part_lines and cfg.part_from == "call":
            answering, found = whole_parts(rt, res, ranked, top, weights)
            part_rows = {**res.rows, **found}
        weigher = (line_weigher(weights, rt.cfg.query.stopwords)
                 if cfg.part_lines_by == "weight" else None)
        for cid, score, _ in top:
            hit = to_hit(res.rows[cid], score, lanes.get(cid, {}))
            drawn[cid] = (cid,)
            part = answering.get(cid)
            if part is not None:
                lines = part_lines(part_rows[part].text, query, rt.counter,
                                   rt.cfg.recall.hit_excerpt_tokens, hit.text, weigher)
                text = f"{hit.text}\n{lines}"
                hit = type(hit)(**{**hit.__dict__, "text": text,
                                   "tokens": rt.counter.count(text)})
                drawn[cid] = (cid, part)
                shown_parts[cid] = lines
            hits.append(hit)
    else:
        budget = rt.cfg.recall.turn_hit_tokens
        for members in group_turns(ranked, res.rows, k):
            best, score = members[0]
            text, n = compose_turn([res.rows[c].text for c, _ in members], query,
                                   rt.counter, budget)
            hit = to_hit(res.rows[best], score, lanes.get(best, {}))
            hits.append(type(hit)(**{**hit.__dict__, "text": text,
                                     "tokens": rt.counter.count(text)}))
            drawn[best] = tuple(c for c, _ in members[: max(1, n)])
            own[best] = res.rows[best].text
    rt.metrics.observe(QUERY_MS, timer.total())
    return hits, drawn, own, shown_parts, weigher
