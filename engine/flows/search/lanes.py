"""Hybrid search: keyword (FTS5 BM25), vector (Chroma) and recency lanes, fused by RRF."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.api import SearchHit
from engine.config import Config
from engine.errors import VectorStoreUnavailable
from engine.flows.runtime import Runtime
from engine.flows.search.plan import QueryPlan, plan_query
from engine.flows.search.stages import StageTimer
from engine.ingest.place import place_of
from engine.metrics import ALERT_VECTOR_DOWN
from engine.pools import shared_pool
from engine.retrieval.config import RerankConfig
from engine.retrieval.fts_match import KeywordQuery, keyword_match
from engine.retrieval.fusion import rrf
from engine.retrieval.query import QueryAnalysis
from engine.store.vault import recency
from engine.store.vault.rows import ChunkRow, Filters


@dataclass(frozen=True)
class PreScans:
    """The rerank's scans of some rows, made ahead under ``cfg`` while the vector lane
    runs (``engine.flows.search.ranking.prescan``, ``lane_stage``'s ``while_waiting``)."""

    cfg: RerankConfig
    scans: dict[int, Any]  # chunk id -> its rerank scan


# What ``lane_stage`` asks for the keyword hits' rows while the vector lane runs.
Prescan = Callable[[list[ChunkRow]], PreScans]


@dataclass(frozen=True)
class LaneResult:
    """Ranked chunk ids per lane, the fused order, and the call's stage timings so far (ms)."""

    analysis: QueryAnalysis
    lanes: dict[str, list[int]]
    fused: list[tuple[int, float, dict[str, int]]]
    rows: dict[int, ChunkRow]
    similarity: dict[int, float]
    timings: dict[str, float]
    keyword_scores: dict[int, float] = field(default_factory=dict)  # BM25, higher better
    query_vector: np.ndarray | None = None  # what the vector lane searched with
    # stored vectors of hits: the vector lane's, and the keyword hits' read ahead
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    # what ``lane_stage``'s ``while_waiting`` made of the keyword hits' rows (None when it
    # did not run): the rerank's scans of them, ``engine.flows.search.ranking.prescan``
    prepared: PreScans | None = None


SIM_DIGITS = 6  # the vector lane keeps its hits' cosines to this many digits


def vector_lane(rt: Runtime, query: str, depth: int, filters: Filters,
                timer: StageTimer | None = None,
                vectors: dict[int, np.ndarray] | None = None,
                vector_map: Callable[[np.ndarray], np.ndarray] | None = None,
                ) -> tuple[list[int], dict[int, float], np.ndarray | None]:
    """Nearest chunks to ``query``: (ids best first, id -> cosine, the query's vector).
    ``timer`` gets the lane's time as ``vector`` and the query embedding's share of it
    as ``embed``; ``vectors`` the hits' stored vectors where the index returned them
    with the hits; ``vector_map`` (recall's learned reader) maps the query's vector
    before the search, and the mapped vector is the one returned."""
    timer = timer or StageTimer()
    with timer.stage("vector"):
        with timer.stage("embed"):
            vec = rt.embed_query(query)
            if vector_map is not None:
                vec = vector_map(vec)
        ids, sims = nearest(rt, vec, depth, filters, vectors)
        return ids, sims, vec


def nearest(rt: Runtime, vec: np.ndarray, depth: int, filters: Filters,
            vectors: dict[int, np.ndarray] | None = None
            ) -> tuple[list[int], dict[int, float]]:
    """The index's nearest chunks to ``vec`` that pass ``filters``: (ids best first,
    id -> cosine); none when the index is down (alerted)."""
    fetch = depth if filters.empty else depth * 8
    try:
        found = rt.vectors.query(vec, fetch, found=vectors)
    except VectorStoreUnavailable:
        rt.metrics.alert(ALERT_VECTOR_DOWN, True, "query failed")
        return [], {}
    rt.metrics.alert(ALERT_VECTOR_DOWN, False)
    # equal similarities in chunk id order: an index loaded fresh and one grown by
    # writes hold the vectors in different orders (and the rotated store's cosines
    # differ from the exact index's in the 8th digit), so the lane must not depend on
    # either: cosines kept to SIM_DIGITS digits, ties by chunk id
    found = sorted(((cid, round(sim, SIM_DIGITS)) for cid, sim in found),
                   key=lambda hit: (-hit[1], hit[0]))
    sims = dict(found)
    ids = [cid for cid, _ in found]
    if filters.empty:
        return ids[:depth], sims
    return passing(rt, ids, depth, filters), sims


def passing(rt: Runtime, ids: list[int], depth: int, filters: Filters) -> list[int]:
    """The first ``depth`` of ``ids`` (in their order) that pass ``filters``, tested in
    batches in that order until ``depth`` pass: twice ``depth`` first, then twice as
    many each time. The over-fetched hits past the last one needed are not tested
    (recall: 400 hits for 50 of session kinds; the same ids as testing all of them). A
    filter of kinds alone (recall's) is decided in SQL (``Vault.passing``), others on
    the rows ``Vault.filter_rows`` reads (``Filters.matches``)."""
    out: list[int] = []
    at, size = 0, max(1, 2 * depth)
    while at < len(ids) and len(out) < depth:
        part = ids[at:at + size]
        if filters.only_kinds:
            ok = rt.vault.passing(part, filters)
            out += [cid for cid in part if cid in ok]
        else:
            rows = rt.vault.filter_rows(part, meta=filters.reads_meta)
            out += [cid for cid in part if cid in rows and filters.matches(rows[cid])]
        at, size = at + len(part), size * 2
    return out[:depth]


def keyword_lane(rt: Runtime, a: QueryAnalysis, depth: int, filters: Filters,
                 cfg: Config, *, alone: bool = True) -> list[tuple[int, float]]:
    """(chunk id, BM25) of the keyword lane for ``a`` alone (benches, tests): its match
    expression (``keyword_match``) and the lane (``keyword_hits``)."""
    return keyword_hits(rt, keyword_match(a, cfg.search, rt.vault), depth, filters, cfg,
                        alone=alone)


def keyword_hits(rt: Runtime, q: KeywordQuery, depth: int, filters: Filters, cfg: Config, *,
                 alone: bool = True) -> list[tuple[int, float]]:
    """(chunk id, BM25) of the keyword lane for the planned ``q``, best first. ``alone``:
    nothing else runs beside it (no vector lane in its thread), so its two FTS5 queries
    may take both cores (``search.keyword_parallel``)."""
    other = q.otherwise
    return rt.vault.keyword(q.match, depth, filters, q.rescore,
                            parallel=alone and cfg.search.keyword_parallel, newest=q.newest,
                            otherwise=(other.match, other.rescore, other.newest)
                            if other is not None else None)


@dataclass(frozen=True)
class LaneHits:
    """What the lanes found for a plan, before fusion."""

    lanes: dict[str, list[int]]  # lane -> chunk ids, best first
    rows: dict[int, ChunkRow]  # the rows read so far (keyword hits read early)
    similarity: dict[int, float]  # vector lane: id -> cosine
    keyword_scores: dict[int, float]  # BM25, higher better
    query_vector: np.ndarray | None
    vectors: dict[int, np.ndarray]
    prepared: PreScans | None
    analysis: QueryAnalysis  # the analysis the keyword lane matched


def lane_stage(rt: Runtime, plan: QueryPlan, timer: StageTimer,
               while_waiting: Prescan | None = None) -> LaneHits:
    """Run every lane the plan calls for (timed as ``keyword``, ``vector`` with its
    ``embed``, ``read_ahead``, ``prepare``, ``recency``).

    The vector lane (query embedding and index search, both outside the GIL) runs in a
    worker thread while this thread runs the keyword lane; when the query names a
    speaker, the vector lane waits for the keyword hits to say which query to embed
    (``QueryPlan.content_for``). With ``while_waiting`` (callers that rerank) and
    ``search.read_ahead``: while the vector lane still runs, the keyword hits' stored
    vectors and rows are read, and ``while_waiting`` (given those rows) prepares what
    the caller will need of them (``LaneResult.prepared``)."""
    cfg, depth, filters = plan.cfg, plan.depth, plan.filters
    lanes: dict[str, list[int]] = {}
    hit_vectors: dict[int, np.ndarray] = {}
    early = (_lane_pool().submit(vector_lane, rt, plan.text, depth, filters, timer,
                                 hit_vectors, plan.vector_map)
             if cfg.search.parallel_lanes and not plan.named else None)
    try:
        with timer.stage("keyword"):
            found = keyword_hits(rt, plan.keyword, depth, filters, cfg, alone=early is None)
            rows: dict[int, ChunkRow] = {}
            content = None
            if plan.named and found:
                rows = rt.vault.chunks([cid for cid, _ in found])
                content = plan.content_for(rows.values())
                if content is not None:
                    found = keyword_hits(rt, content.keyword, depth, filters, cfg,
                                         alone=early is None)
            lanes["keyword"] = [cid for cid, _ in found]
            if plan.learned is not None:  # the user's own words for the query's
                lanes["learned"] = [cid for cid, _ in keyword_hits(
                    rt, plan.learned, depth, filters, cfg, alone=early is None)]
        prefetched: dict[int, np.ndarray] = {}
        prepared: PreScans | None = None
        if (early is not None and while_waiting is not None
                and cfg.search.read_ahead and not early.done()):
            # the keyword lane's first half-window of hits: at the default depth (50 a
            # lane, a window of 100, no recency lane) all of them reach the rerank window;
            # otherwise some may not, and reading them was work for nothing
            ahead = lanes["keyword"][: max(1, cfg.rerank.window // 2)]
            prefetched = read_ahead(rt, ahead, rows, timer)
            if not early.done():
                with timer.stage("prepare"):
                    prepared = while_waiting([rows[c] for c in ahead if c in rows])
    finally:
        vector = early.result() if early is not None else None  # never left running
    if vector is None:
        text = content.text if content is not None else plan.text
        vector = vector_lane(rt, text, depth, filters, timer, hit_vectors, plan.vector_map)
    for cid, vec in prefetched.items():
        hit_vectors.setdefault(cid, vec)
    lanes["vector"], sims, qvec = vector
    if plan.lane_map is not None and qvec is not None:  # recall's learned reader, beside
        with timer.stage("adapted"):
            lanes["adapted"] = nearest(rt, plan.lane_map(qvec), depth, filters)[0]
    if plan.recency:
        with timer.stage("recency"):
            lanes["recency"] = recency.recent(rt.vault, cfg.search.recency_depth, filters)
    return LaneHits(lanes, rows, sims, dict(found), qvec, hit_vectors, prepared,
                    plan.analysis)


def fuse_stage(rt: Runtime, plan: QueryPlan, hits: LaneHits, timer: StageTimer
               ) -> LaneResult:
    """The lanes fused by reciprocal rank with the plan's weights, and the fused hits'
    rows read (timed as ``fetch``); hits whose rows are gone are dropped."""
    fused = rrf(hits.lanes, dict(plan.weights), k=plan.cfg.search.rrf_k)
    rows = hits.rows
    with timer.stage("fetch"):
        rows.update(rt.vault.chunks([cid for cid, _, _ in fused if cid not in rows]))
    fused = [f for f in fused if f[0] in rows]
    return LaneResult(plan.analysis, hits.lanes, fused, rows, hits.similarity, timer.timings,
                      hits.keyword_scores, hits.query_vector, hits.vectors, hits.prepared)


def run_lanes(rt: Runtime, query: str, *, filters: Filters | None = None,
              depth: int | None = None, cfg: Config | None = None,
              while_waiting: Prescan | None = None,
              timer: StageTimer | None = None) -> LaneResult:
    """Plan ``query``, run its lanes and fuse them: the fused hits before any rerank
    (recall's related memory; benches that fit the rerank)."""
    cfg = cfg or rt.cfg
    timer = timer or StageTimer()
    with timer.stage("analysis"):
        plan = plan_query(rt, query, cfg, filters=filters, depth=depth)
    return fuse_stage(rt, plan, lane_stage(rt, plan, timer, while_waiting), timer)


def read_ahead(rt: Runtime, ids: list[int], rows: dict[int, ChunkRow],
               timer: StageTimer) -> dict[int, np.ndarray]:
    """The keyword lane's hits read while the vector lane runs in its thread: their rows
    (into ``rows``) and their stored vectors (returned; {} when the index cannot say, and
    the rerank reads what it lacks later). At 100k chunks the vectors take about 5 ms
    (one Chroma ``get``; below ``store.exact_search_max`` the in-memory exact index
    answers) that the rerank would otherwise wait for after both lanes."""
    with timer.stage("read_ahead"):
        try:
            got = rt.vectors.vectors(ids) if ids else {}
        except VectorStoreUnavailable:
            got = {}
        rows.update(rt.vault.chunks([c for c in ids if c not in rows]))
    return got


def _lane_pool() -> ThreadPoolExecutor:
    """Threads for vector lanes, shared by every engine of the process (a few: one per
    concurrent build_context, as the IPC server's worker threads may run several)."""
    return shared_pool("ctx-lane", 4)


def to_hit(row: ChunkRow, score: float, lanes: dict[str, int], stage: str = "ready"
           ) -> SearchHit:
    path, root, lines = place_of(row.source, row.source_kind, row.meta)
    return SearchHit(
        chunk_id=row.id, source_id=row.source_id, source=row.source, title=row.title,
        kind=row.kind, source_kind=row.source_kind, text=row.text, score=score,
        lanes=dict(lanes), time=row.time, ordinal=row.ordinal, tokens=row.tokens,
        heading=row.heading, meta=dict(row.meta), path=path, root=root, lines=lines,
        stage=stage,
    )

