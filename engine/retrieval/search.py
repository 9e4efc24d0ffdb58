"""Hybrid search: keyword (FTS5 BM25), vector (Chroma) and recency lanes, fused by RRF."""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.config import Config
from engine.errors import VectorStoreUnavailable
from engine.metrics import ALERT_VECTOR_DOWN, QUERY_MS
from engine.retrieval.fusion import rrf
from engine.retrieval.query import QueryAnalysis, analyze_query, fts_query, lane_weights
from engine.runtime import Runtime
from engine.store.vault import ChunkRow, Filters
from engine.types import SearchHit


@dataclass(frozen=True)
class LaneResult:
    """Ranked chunk ids per lane, the fused order, and per-lane timings (ms)."""

    analysis: QueryAnalysis
    lanes: dict[str, list[int]]
    fused: list[tuple[int, float, dict[str, int]]]
    rows: dict[int, ChunkRow]
    similarity: dict[int, float]
    timings: dict[str, float]


def _matches(row: ChunkRow, f: Filters) -> bool:
    if f.kinds and row.kind not in f.kinds and row.source_kind not in f.kinds:
        return False
    if f.path_prefix and not row.source.startswith(f.path_prefix):
        return False
    if f.since is not None and (row.time is None or row.time < f.since):
        return False
    if f.until is not None and (row.time is None or row.time > f.until):
        return False
    if f.source_ids is not None and row.source_id not in f.source_ids:
        return False
    if f.project is not None and row.project != f.project:
        return False
    if f.branch is not None and row.meta.get("branch") != f.branch:
        return False
    return True


def vector_lane(rt: Runtime, query: str, depth: int, filters: Filters
                ) -> tuple[list[int], dict[int, float]]:
    vec = rt.embed_query(query)
    fetch = depth if filters.empty else depth * 8
    try:
        found = rt.vectors.query(vec, fetch)
    except VectorStoreUnavailable:
        rt.metrics.alert(ALERT_VECTOR_DOWN, True, "query failed")
        return [], {}
    rt.metrics.alert(ALERT_VECTOR_DOWN, False)
    sims = dict(found)
    if filters.empty:
        return [cid for cid, _ in found][:depth], sims
    rows = rt.vault.chunks([cid for cid, _ in found])
    keep = [cid for cid, _ in found if cid in rows and _matches(rows[cid], filters)]
    return keep[:depth], sims


def run_lanes(rt: Runtime, query: str, *, filters: Filters | None = None,
              depth: int | None = None, analysis: QueryAnalysis | None = None,
              recency: bool | None = None, cfg: Config | None = None) -> LaneResult:
    """Run every lane the query calls for and fuse them (weights by query class)."""
    cfg = cfg or rt.cfg
    filters = filters or Filters()
    depth = depth or cfg.search.lane_depth
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    a = analysis or analyze_query(query, cfg.query)
    timings["analysis"] = (time.perf_counter() - t0) * 1000
    lanes: dict[str, list[int]] = {}

    t = time.perf_counter()
    lanes["keyword"] = [cid for cid, _ in rt.vault.keyword(fts_query(a), depth, filters)]
    timings["keyword"] = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    lanes["vector"], sims = vector_lane(rt, query, depth, filters)
    timings["vector"] = (time.perf_counter() - t) * 1000

    use_recency = a.temporal_recent if recency is None else recency
    if use_recency and cfg.search.recency_depth:
        t = time.perf_counter()
        lanes["recency"] = rt.vault.recent(cfg.search.recency_depth, filters)
        timings["recency"] = (time.perf_counter() - t) * 1000

    weights = lane_weights(a.qclass, cfg.query, recent=a.temporal_recent)
    fused = rrf(lanes, weights, k=cfg.search.rrf_k)
    t = time.perf_counter()
    rows = rt.vault.chunks([cid for cid, _, _ in fused])
    timings["fetch"] = (time.perf_counter() - t) * 1000
    fused = [f for f in fused if f[0] in rows]
    return LaneResult(a, lanes, fused, rows, sims, timings)


def to_hit(row: ChunkRow, score: float, lanes: dict[str, int]) -> SearchHit:
    return SearchHit(
        chunk_id=row.id, source_id=row.source_id, source=row.source, title=row.title,
        kind=row.kind, source_kind=row.source_kind, text=row.text, score=score,
        lanes=dict(lanes), time=row.time, ordinal=row.ordinal, tokens=row.tokens,
        heading=row.heading, meta=dict(row.meta),
    )


def search(rt: Runtime, query: str, k: int = 10, *, filters: Filters | None = None
           ) -> list[SearchHit]:
    """The top ``k`` chunks for ``query``: keyword and vector lanes fused by RRF."""
    t = time.perf_counter()
    res = run_lanes(rt, query, filters=filters, depth=max(k, rt.cfg.search.lane_depth))
    hits = [to_hit(res.rows[cid], score, lanes) for cid, score, lanes in res.fused[:k]]
    rt.metrics.observe(QUERY_MS, (time.perf_counter() - t) * 1000)
    return hits
