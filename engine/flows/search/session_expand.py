"""Session expansion: the chunks of the best coding sessions join the window.

A question about a past session names the session well (the window's first transcript
chunk is the right session's in most questions) but not the chunk that answers,
which the lanes may not have reached at their depth. So the chunks of the
``rerank.session_expand`` best sessions are added to it, with a fused score of 0, and
the transcript profile ranks them (their similarity comes from their stored vectors).
The best sessions are those of the best chunks once the window is reranked
(``rerank.session_expand_by = "rerank"``: recall reranks twice) or those of the highest
fused score in the window (sum over their chunks, ``"fused"``). The first session adds
up to ``rerank.session_expand_chunks`` chunks; each later one (a look-alike session of
the same work, often) only its ``rerank.session_expand_others`` chunks closest to the
query, so that the rerank's cost stays near one session's and the first session's
chunks are not crowded out, and its ``rerank.session_expand_words`` chunks that hold the
most of the question's words (each weighed by how few of the session's chunks hold it:
the chunk that answers often shares the question's words but not its meaning, which
the closest chunks miss; 0, off, by default: it did not carry over to a second question
set, docs/tuning.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from engine.config import Config
from engine.errors import VectorStoreUnavailable
from engine.flows.runtime import Runtime
from engine.flows.search.lanes import LaneResult
from engine.store.vault.rows import ChunkRow, Filters

TRANSCRIPT = "transcript"  # the source kind whose chunks belong to sessions
Ranked = tuple[int, float, dict[str, float]]  # as engine.flows.search.ranking ranks
MIN_WORD = 3  # shorter words ("id", "go") are inside too many others to say anything


def expand_sessions(rt: Runtime, cfg: Config, res: LaneResult, filters: Filters | None,
                    project: str | None = None,
                    sessions: Mapping[str, float] | None = None,
                    ranked: Sequence[Ranked] | None = None) -> tuple[LaneResult, int]:
    """``res`` with the chunks of its best sessions placed right after its window, and
    how many were added (the caller widens the window by as many). The best sessions
    are those of ``ranked`` (the window reranked once) when it is given; else a session
    of ``project`` (asked from) counts ``rerank.project_expand`` times its fused score, and
    each session 1 + ``rerank.session_words_expand`` times its share of the question's
    rare words (``sessions``, ``engine.flows.search.session_words``) times it."""
    n = cfg.rerank.session_expand
    if n <= 0:
        return res, 0
    best = (ranked_sessions(ranked, res.rows, n) if ranked is not None
            else fused_sessions(cfg, res, project, sessions, n))
    best += worded_sessions(sessions, best, cfg.rerank.session_expand_lane,
                            cfg.rerank.session_lane_min)
    if not best:
        return res, 0
    f = filters or Filters()
    limit = cfg.rerank.session_expand_chunks  # each session's own
    added: list[ChunkRow] = []
    vectors: dict[int, np.ndarray] = {}
    keep = cfg.rerank.session_expand_others
    by_words = cfg.rerank.session_expand_words
    for place, session in enumerate(best):
        # a later session's chunks are chosen by their vectors alone (no words read):
        # their texts are read for the chosen ones only (at 500k chunks up to 400 rows
        # a session, each page decrypted and its text built, for 20 kept)
        light = place > 0 and by_words <= 0
        if light and (f.empty or f.only_kinds):  # (recall's filter) ids and kinds only
            added.extend(chosen_rows(rt, res, session, limit, f.kinds, keep, vectors))
            continue
        got = [r for r in rt.vault.session_chunks([session], limit, text=not light,
                                                  meta=not light or f.reads_meta)
               if r.id not in res.rows and f.matches(r)]
        if place and len(got) > keep + by_words:  # a session after the first: its closest
            worded = worded_rows(got, res.analysis.terms, by_words)
            rest = [r for r in got if r.id not in worded]
            near_rows, near = closest(rt, res, rest, keep)
            vectors.update(near)
            chosen = worded | {r.id for r in near_rows}
            got = [r for r in got if r.id in chosen]
        if light:
            whole = rt.vault.chunks([r.id for r in got])
            got = [whole[r.id] for r in got if r.id in whole]
        added.extend(got)
    if not added:
        return res, 0
    rows = {**res.rows, **{r.id: r for r in added}}
    cut = cfg.rerank.window
    fused = [*res.fused[:cut], *((r.id, 0.0, {}) for r in added), *res.fused[cut:]]
    return dataclasses.replace(res, rows=rows, fused=fused,
                               vectors={**vectors, **res.vectors}), len(added)


def chosen_rows(rt: Runtime, res: LaneResult, session: str, limit: int,
                kinds: Sequence[str], keep: int, vectors: dict[int, np.ndarray]
                ) -> list[ChunkRow]:
    """A later session's chunks as ``expand_sessions`` adds them under a filter of
    ``kinds`` alone (or none), read whole: of its first ``limit`` chunks those not in
    ``res`` that pass, and of more than ``keep`` of them the ``keep`` closest to the query
    (their vectors put in ``vectors``). The same chunks as reading every row first and
    testing ``Filters.matches`` (a chunk passes when its kind or its source's is one of
    ``kinds``), without building a row for the ones left out."""
    ids = [cid for cid, kind, source_kind in rt.vault.session_chunk_kinds([session], limit)
           if cid not in res.rows and (not kinds or kind in kinds or source_kind in kinds)]
    if len(ids) > keep:
        ids, near = closest_ids(rt, res, ids, keep)
        vectors.update(near)
    whole = rt.vault.chunks(ids)
    return [whole[cid] for cid in ids if cid in whole]


def closest(rt: Runtime, res: LaneResult, rows: Sequence[ChunkRow], keep: int
            ) -> tuple[list[ChunkRow], dict[int, np.ndarray]]:
    """The ``keep`` of ``rows`` whose stored vectors are closest to the query's (in their
    order), and those vectors (the rerank reuses them); the first ``keep`` rows when the
    query or the vectors are not there."""
    ids, found = closest_ids(rt, res, [r.id for r in rows], keep)
    chosen = set(ids)
    return [r for r in rows if r.id in chosen], found


def closest_ids(rt: Runtime, res: LaneResult, ids: Sequence[int], keep: int
                ) -> tuple[list[int], dict[int, np.ndarray]]:
    """``closest`` of chunk ids (distinct): the ``keep`` closest, in their order, and
    their vectors."""
    q = res.query_vector
    try:
        found = rt.vectors.vectors(list(ids)) if q is not None else {}
    except VectorStoreUnavailable:
        found = {}
    have = [c for c in ids if c in found]
    if not have or q is None:
        return list(ids[:keep]), {}
    sims = np.stack([found[c] for c in have]) @ np.asarray(q, dtype=np.float32)
    chosen = {have[i] for i in np.argsort(-sims, kind="stable")[:keep]}
    kept = [c for c in ids if c in chosen]
    return kept, {c: found[c] for c in kept}


def worded_rows(rows: Sequence[ChunkRow], words: Sequence[str], keep: int) -> set[int]:
    """The ids of the ``keep`` of ``rows`` that weigh most of the question's content
    ``words`` (its stemmed terms, lowercase; each found as a substring, so "commit" counts
    in "committed"), each weighed log(1 + len(rows) / rows holding it): a word few of the
    session's chunks hold says which of them is meant. Rows holding none are left out; ties go to the
    earlier row. Substring tests, not a tokenizer: 800 rows in about a millisecond."""
    wanted = [w for w in dict.fromkeys(words) if len(w) >= MIN_WORD]
    if keep <= 0 or not wanted or not rows:
        return set()
    texts = [r.text.lower() for r in rows]
    held = {w: [i for i, t in enumerate(texts) if w in t] for w in wanted}
    score = [0.0] * len(rows)
    for ix in held.values():
        if ix:
            weight = math.log(1.0 + len(rows) / len(ix))
            for i in ix:
                score[i] += weight
    order = sorted((i for i, v in enumerate(score) if v > 0), key=lambda i: (-score[i], i))
    return {rows[i].id for i in order[:keep]}


def worded_sessions(sessions: Mapping[str, float] | None, chosen: Sequence[str], n: int,
                    least: float) -> list[str]:
    """The session lane: the ``n`` sessions not ``chosen`` that hold the largest share of
    the question's rare words (``sessions``, ``engine.flows.search.session_words``), at
    least ``least`` of it: a session the lanes' chunks did not rank may still be the one
    that uses the question's own words."""
    if n <= 0 or not sessions:
        return []
    order = sorted((s for s, share in sessions.items() if share >= least and s not in chosen),
                   key=lambda s: (-sessions[s], s))
    return order[:n]


def ranked_sessions(ranked: Sequence[Ranked], rows: Mapping[int, ChunkRow], n: int
                    ) -> list[str]:
    """The first ``n`` sessions of ``ranked``'s transcript chunks, in their order."""
    out: list[str] = []
    for cid, _, _ in ranked:
        row = rows.get(cid)
        session = row.meta.get("session") if row is not None else None
        if row is not None and row.source_kind == TRANSCRIPT and isinstance(session, str) \
                and session not in out:
            out.append(session)
            if len(out) >= n:
                break
    return out


def fused_sessions(cfg: Config, res: LaneResult, project: str | None,
                   sessions: Mapping[str, float] | None, n: int) -> list[str]:
    """The ``n`` sessions of the highest fused score in the window (sum over chunks)."""
    totals: dict[str, float] = defaultdict(float)
    for cid, score, _ in res.fused[: cfg.rerank.window]:
        row = res.rows[cid]
        session = row.meta.get("session")
        if row.source_kind == TRANSCRIPT and isinstance(session, str):
            same = project is not None and row.meta.get("project") == project
            totals[session] += score * (cfg.rerank.project_expand if same else 1.0)
    if sessions:
        lift = cfg.rerank.session_words_expand
        totals = defaultdict(float, {s: t * (1.0 + lift * sessions.get(s, 0.0))
                                     for s, t in totals.items()})
    return sorted(totals, key=lambda s: -totals[s])[:n]
