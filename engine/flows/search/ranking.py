"""The ranking that search and build_context share: fused lane hits, reranked by the
features of each hit's kind of memory (see ``profiles``).

The window is the top of the fused list; the query's cosine similarity to every
window hit comes from the vector lane, else from the chunk's stored vector (read
once from the vault's embedding cache, float32). A chat turn's similarity is taken
in its context (its vector mixed with the adjacent turns', ``RerankConfig.
context_share``). ``rank_hits`` returns the ranked ids with their features and the
vectors it read (dedupe reuses them).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.api import SearchHit
from engine.blas import limit_blas_threads
from engine.config import Config
from engine.errors import VectorStoreUnavailable
from engine.flows.runtime import Runtime
from engine.flows.search import session_words
from engine.flows.search.feedback import fed_back
from engine.flows.search.lanes import LaneResult, PreScans, fuse_stage, lane_stage, to_hit
from engine.flows.search.plan import QueryPlan, adapted, plan_query
from engine.flows.search.session_expand import expand_sessions
from engine.flows.search.stages import StageTimer
from engine.ingest.embedtext import cache_key, embed_text
from engine.metrics import QUERY_MS
from engine.retrieval.config import RerankConfig
from engine.retrieval.fusion import rrf
from engine.retrieval.profiles import profile_of
from engine.retrieval.rerank import RerankCandidate, rerank
from engine.retrieval.scan import prepared, scan_all, scan_settings
from engine.store.vault.rows import ChunkRow, Filters

Ranked = tuple[int, float, dict[str, float]]  # (chunk id, score, features)


@dataclass(frozen=True)
class RankResult:
    """Ranked chunk ids (best first) with features, and the window's stored vectors."""

    ranked: list[Ranked]
    vectors: dict[int, np.ndarray]
    scans: PreScans | None = None  # the window's rerank scans (a second rerank reuses them)


def rank_hits(rt: Runtime, cfg: Config, res: LaneResult, *, all_features: bool = False,
              timer: StageTimer | None = None, project: str | None = None,
              sessions: Mapping[str, float] | None = None) -> RankResult:
    """Rerank the fused window of ``res`` by each hit's kind profile (``all_features``:
    every feature computed, for fitting the weights). ``timer`` gets the time spent
    reading the window's stored vectors as ``vectors``. ``project``: the project a
    recall is asked from, ``sessions`` each session's share of the question's rare words
    (``rerank``)."""
    limit_blas_threads(cfg.search.blas_threads)
    rows = res.rows
    pool = [(cid, score) for cid, score, _ in res.fused[: max(cfg.rerank.window, 1)]]
    with (timer or StageTimer()).stage("vectors"):
        vectors = window_vectors(rt, res, [c for c, _ in pool], rows)
    sims = similarities(res, vectors)
    sims.update(context_similarities(rt, res, [rows[c] for c, _ in pool], vectors, cfg.rerank))
    window = [RerankCandidate(id=cid, text=rerank_text(rows[cid]), fused=score,
                              time=rows[cid].time, meta=rerank_meta(rows[cid]),
                              similarity=sims.get(cid), keyword=res.keyword_scores.get(cid),
                              profile=profile_of(rows[cid].source_kind, cfg.rerank))
              for cid, score in pool]
    early = res.prepared
    known = (early.scans if early is not None
             and scan_settings(early.cfg) == scan_settings(cfg.rerank) else {})
    scans = {**known, **scan_all([c for c in window if c.id not in known], cfg.rerank)}
    ranked = rerank(res.analysis, window, cfg.rerank, all_features=all_features, scans=scans,
                    project=project, sessions=sessions)
    tail = res.fused[len(pool):]
    if tail:
        floor = ranked[-1][1] if ranked else 0.0
        ranked.extend((cid, floor - 1e-6 * (j + 1), {"fused": score})
                      for j, (cid, score, _) in enumerate(tail))
    return RankResult(ranked, vectors, PreScans(cfg.rerank, scans))


def prescan(rows: Sequence[ChunkRow], cfg: RerankConfig, terms: Sequence[str] = ()
            ) -> PreScans:
    """The rerank's scans of ``rows`` (``lane_stage``'s ``while_waiting``, for the keyword
    hits: read while the query embeds, not after: the query's ``terms`` each holds, and
    all its words where its profile counts them; ``scan.prepared``), as ``rank_hits``
    builds them; ``rank_hits`` uses them only under the same rerank config."""
    return PreScans(cfg, prepared([RerankCandidate(id=r.id, text=rerank_text(r), fused=0.0,
                                                   time=r.time, meta=rerank_meta(r),
                                                   profile=profile_of(r.source_kind, cfg))
                                   for r in rows], cfg, terms))


def similarities(res: LaneResult, vectors: Mapping[int, np.ndarray]) -> dict[int, float]:
    """Cosine of the query to every candidate: the vector lane's, else from stored vectors."""
    sims = dict(res.similarity)
    q = res.query_vector
    missing = [cid for cid in vectors if cid not in sims]
    if q is not None and missing:
        matrix = np.stack([vectors[c] for c in missing])
        if matrix.shape[1] == len(q):
            sims.update(zip(missing, (matrix @ np.asarray(q, dtype=np.float32)).tolist(),
                            strict=True))
    return sims


def context_similarities(rt: Runtime, res: LaneResult, window: Sequence[ChunkRow],
                         vectors: Mapping[int, np.ndarray], cfg: RerankConfig
                         ) -> dict[int, float]:
    """The query's similarity to each chat turn of the window read in its context
    (``cfg.context_kinds``, ``cfg.context_share``): chunk id -> cosine. The adjacent
    chunks are read in one vault lookup and their vectors as the window's are."""
    q = res.query_vector
    turns = [r for r in window if r.kind in cfg.context_kinds and r.id in vectors]
    if q is None or not turns or cfg.context_share <= 0:
        return {}
    near = rt.vault.chunks_at([(r.source_id, r.ordinal + d) for r in turns for d in (-1, 1)])
    around: dict[int, list[int]] = {}
    for r in turns:
        around[r.id] = [nb[0] for d in (-1, 1)
                        if (nb := near.get((r.source_id, r.ordinal + d))) is not None
                        and nb[1] == r.kind and nb[2] == r.heading]
    need = sorted({n for ns in around.values() for n in ns if n not in vectors})
    found = window_vectors(rt, res, need) if need else {}
    own = np.stack([vectors[r.id] for r in turns]).astype(np.float32)
    near_sum = np.zeros_like(own)
    for i, r in enumerate(turns):
        for n in around[r.id]:
            v = vectors.get(n, found.get(n))
            if v is not None and v.shape == own.shape[1:]:
                near_sum[i] += v
    query = np.asarray(q, dtype=np.float32)
    if own.shape[1] != query.shape[0]:
        return {}
    cos = context_cosines(query, own, near_sum, cfg.context_share)
    return {r.id: float(c) for r, c in zip(turns, cos.tolist(), strict=True)}


def context_cosines(query: np.ndarray, own: np.ndarray, near_sum: np.ndarray,
                    share: float) -> np.ndarray:
    """Cosine of ``query`` to each row of ``own + share * near_sum`` (rows: chunks;
    ``near_sum``: the sum of each chunk's adjacent vectors); 0 for a zero row."""
    mixed = own + share * near_sum
    norms = np.linalg.norm(mixed, axis=1) * float(np.linalg.norm(query))
    return np.divide(mixed @ query, norms, out=np.zeros(len(mixed), np.float32),
                     where=norms > 0)


def window_vectors(rt: Runtime, res: LaneResult, ids: Sequence[int],
                   rows: Mapping[int, ChunkRow] | None = None) -> dict[int, np.ndarray]:
    """Stored vectors of chunks: those the vector lane returned with its hits, the rest
    read from the vector index (one call), and any it lacks from the vault's embedding
    cache (for its keys, the chunks' ``rows``, read from the vault when not given). At
    100k chunks the index answers 50 ids in about half the time the vault takes
    (random pages of the cache table; issue 12)."""
    out = {c: res.vectors[c] for c in ids if c in res.vectors}
    missing = [c for c in ids if c not in out]
    if missing:
        try:
            out.update(rt.vectors.vectors(missing))
        except VectorStoreUnavailable:
            pass
        rest = [c for c in missing if c not in out]
        if rest:
            known = rows if rows is not None else rt.vault.chunks(rest)
            out.update(stored_vectors(rt, [known[c] for c in rest if c in known]))
    return out


def stored_vectors(rt: Runtime, rows: Sequence[ChunkRow]) -> dict[int, np.ndarray]:
    """Model-space vectors of chunks, from the vault's embedding cache (no vector-store trip)."""
    keys = {r.id: cache_key(rt.embedder.name, embed_text(r.title, r.heading, r.kind, r.text))
            for r in rows}
    found = rt.vault.cached_vectors(list(keys.values()))
    return {cid: np.frombuffer(found[k], dtype=np.float32) for cid, k in keys.items() if k in found}


def rerank_text(row: ChunkRow) -> str:
    return f"{row.heading}\n{row.text}" if row.heading else row.text


def rerank_meta(row: ChunkRow) -> dict[str, Any]:
    meta = {"title": row.title, "heading": row.heading, "source": row.source, "kind": row.kind,
            "ordinal": row.ordinal}
    for key in ("speaker", "path", "project", "tool", "session", "failure", "turn"):
        if key in row.meta:
            meta[key] = row.meta[key]
    return meta


def distinct_sources_of(ranked: Sequence[tuple[int, float, Any]], rows: Mapping[int, ChunkRow],
                     k: int) -> list[tuple[int, float, Any]]:
    """The best-ranked chunk of each source, best first, at most ``k`` of them."""
    seen: set[int] = set()
    out = []
    for item in ranked:
        sid = rows[item[0]].source_id
        if sid in seen:
            continue
        seen.add(sid)
        out.append(item)
        if len(out) >= k:
            break
    return out


@dataclass(frozen=True)
class Ranking:
    """A query through its plan, lanes, fuse and rank stages (``rank_stages``)."""

    plan: QueryPlan
    res: LaneResult  # the lanes' result: rows, lane ranks, the fused list
    ranked: RankResult  # every candidate best first, and the window's stored vectors


def rank_stages(rt: Runtime, query: str, cfg: Config, timer: StageTimer, *,
                filters: Filters | None = None, depth: int | None = None,
                adapter: Callable[[QueryPlan], Any] | None = None,
                expand_session: bool = False, project: str | None = None,
                vector_keeps: Callable[[ChunkRow], bool] | None = None) -> Ranking:
    """The one path of search, recall and build_context up to the rank: ``query``
    (checked) planned once under ``cfg`` (``filters``, lane ``depth``; ``adapter``:
    recall's learned reader says what it changes, ``plan.adapted``), its lanes, fused,
    reranked; each stage timed in ``timer``. ``expand_session`` (recall): the best
    coding sessions' chunks join the window, those of ``project`` first;
    ``vector_keeps``: some chunks are found only by their words (recall's parts)."""
    with timer.stage("analysis"):
        plan = plan_query(rt, query, cfg, filters=filters, depth=depth)
        if adapter is not None:
            plan = adapted(plan, adapter(plan))
    hits = lane_stage(rt, plan, timer, functools.partial(prescan, cfg=cfg.rerank,
                                                        terms=plan.analysis.terms))
    res = fuse_stage(rt, plan, hits, timer)
    if vector_keeps is not None:  # some chunks only by their words (recall's parts)
        res = without_vector(res, plan, vector_keeps)
    sessions = None
    if expand_session and session_words.wanted(cfg):  # recall: the words only a session uses
        with timer.stage("session_words"):
            sessions = session_words.session_words(rt, cfg, res.analysis)
    first = None
    if expand_session and cfg.rerank.session_expand_by == "rerank":
        with timer.stage("rerank_first"):  # the sessions to expand: those ranked best
            pass1 = rank_hits(rt, cfg, res, timer=timer, project=project, sessions=sessions)
        first = pass1.ranked
        res = dataclasses.replace(res, vectors={**pass1.vectors, **res.vectors},
                                  prepared=pass1.scans)  # the window tokenized once
        fed = None
        if cfg.rerank.feedback > 0 or cfg.rerank.feedback_terms > 0:  # off by default
            with timer.stage("feedback"):
                fed = fed_back(rt, plan, res, pass1.ranked, cfg.rerank)
        if fed is not None:  # the query read in the words of its first hits
            use = cfg.rerank.feedback_use
            if use in ("expand", "both"):
                with timer.stage("rerank_feedback"):
                    first = rank_hits(rt, cfg, fed, timer=timer, project=project,
                                      sessions=sessions).ranked
            if use in ("final", "both"):
                res = fed
    res, added = (expand_sessions(rt, cfg, res, filters, project, sessions, first)
                  if expand_session else (res, 0))
    if added:  # the sessions' chunks are reranked with the window
        cfg = dataclasses.replace(cfg, rerank=dataclasses.replace(
            cfg.rerank, window=cfg.rerank.window + added))
    with timer.stage("rerank"):
        ranked = rank_hits(rt, cfg, res, timer=timer, project=project, sessions=sessions)
    return Ranking(plan, res, ranked)


def rank_query(rt: Runtime, query: str, k: int = 10, *, filters: Filters | None = None,
               distinct_sources: bool = False, expand_session: bool = False,
               adapter: Callable[[QueryPlan], Any] | None = None,
               project: str | None = None,
               vector_keeps: Callable[[ChunkRow], bool] | None = None
               ) -> tuple[LaneResult, list[Ranked], StageTimer]:
    """The stages of ``search`` up to the rank (``rank_stages``) for its top ``k``: the
    lanes' result (rows and lane ranks), every candidate ranked best first, and the
    stages' timer. ``adapter`` (recall's learned reader) says, for the planned query,
    what it changes (``plan.adapted``). ``project``: the project a recall is asked from
    (its sessions ranked first)."""
    timer = StageTimer()
    cfg = rt.cfg
    depth = max(k, cfg.search.lane_depth)
    if distinct_sources:
        depth = min(1000, depth * cfg.search.distinct_depth_factor)
        if cfg.rerank.distinct_window > cfg.rerank.window:
            cfg = dataclasses.replace(cfg, rerank=dataclasses.replace(
                cfg.rerank, window=cfg.rerank.distinct_window))
    ranking = rank_stages(rt, query, cfg, timer, filters=filters, depth=depth, adapter=adapter,
                          expand_session=expand_session, project=project,
                          vector_keeps=vector_keeps)
    return ranking.res, ranking.ranked.ranked, timer


def without_vector(res: LaneResult, plan: QueryPlan, keeps: Callable[[ChunkRow], bool]
                   ) -> LaneResult:
    """``res`` fused again without the vector lane's hits that ``keeps`` refuses."""
    lanes = dict(res.lanes)
    lanes["vector"] = [c for c in lanes.get("vector", ()) if c in res.rows and keeps(res.rows[c])]
    fused = [f for f in rrf(lanes, dict(plan.weights), k=plan.cfg.search.rrf_k)
             if f[0] in res.rows]
    return dataclasses.replace(res, lanes=lanes, fused=fused)


def search(rt: Runtime, query: str, k: int = 10, *, filters: Filters | None = None,
           distinct_sources: bool = False, expand_session: bool = False) -> list[SearchHit]:
    """The top ``k`` chunks for ``query``, ranked as build_context ranks them: the same
    plan and stages up to the rank.

    ``distinct_sources``: at most one hit per source (its best chunk), so that ``k``
    hits name ``k`` different sources where the store has them. ``expand_session``
    (recall): the best coding sessions' chunks join the window (``session_expand``).
    """
    res, ranked, timer = rank_query(rt, query, k, filters=filters,
                                    distinct_sources=distinct_sources,
                                    expand_session=expand_session)
    lanes = {cid: ranks for cid, _, ranks in res.fused}
    top = (distinct_sources_of(ranked, res.rows, k) if distinct_sources else ranked[:k])
    waiting = rt.vault.waiting_sources()  # stored, their vectors not made yet
    found = [to_hit(res.rows[cid], score, lanes.get(cid, {}),
                    "keyword" if res.rows[cid].source_id in waiting else "ready")
             for cid, score, _ in top]
    rt.metrics.observe(QUERY_MS, timer.total())
    return found
