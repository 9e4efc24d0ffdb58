"""Hybrid search: keyword (FTS5 BM25), vector (Chroma) and recency lanes, fused by RRF."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.api import SearchHit
from engine.config import Config
from engine.errors import VectorStoreUnavailable
from engine.flows.runtime import Runtime
from engine.metrics import ALERT_VECTOR_DOWN, QUERY_MS
from engine.retrieval.fts_match import fts_parts
from engine.retrieval.fusion import rrf
from engine.retrieval.query import QueryAnalysis, analyze_query, lane_weights
from engine.store.vault import ChunkRow, Filters


@dataclass(frozen=True)
class LaneResult:
    """Ranked chunk ids per lane, the fused order, and per-lane timings (ms)."""

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
    # what ``run_lanes``'s ``while_waiting`` made of the keyword hits' rows (None when it
    # did not run): the rerank's scans of them, ``engine.flows.ranking.prescan``
    prepared: Any = None


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
    return f.branch is None or row.meta.get("branch") == f.branch


def vector_lane(rt: Runtime, query: str, depth: int, filters: Filters,
                timings: dict[str, float] | None = None,
                vectors: dict[int, np.ndarray] | None = None,
                ) -> tuple[list[int], dict[int, float], np.ndarray | None]:
    """Nearest chunks to ``query``: (ids best first, id -> cosine, the query's vector).
    ``timings`` gets the lane's time (ms) as ``vector`` and the query embedding's share
    of it as ``embed``; ``vectors`` the hits' stored vectors where the index returned
    them with the hits."""
    t = time.perf_counter()
    try:
        return _vector_lane(rt, query, depth, filters, timings, vectors)
    finally:
        if timings is not None:
            timings["vector"] = (time.perf_counter() - t) * 1000


def _vector_lane(rt: Runtime, query: str, depth: int, filters: Filters,
                 timings: dict[str, float] | None, vectors: dict[int, np.ndarray] | None,
                 ) -> tuple[list[int], dict[int, float], np.ndarray | None]:
    t = time.perf_counter()
    vec = rt.embed_query(query)
    if timings is not None:
        timings["embed"] = (time.perf_counter() - t) * 1000
    fetch = depth if filters.empty else depth * 8
    try:
        found = rt.vectors.query(vec, fetch, found=vectors)
    except VectorStoreUnavailable:
        rt.metrics.alert(ALERT_VECTOR_DOWN, True, "query failed")
        return [], {}, vec
    rt.metrics.alert(ALERT_VECTOR_DOWN, False)
    sims = dict(found)
    if filters.empty:
        return [cid for cid, _ in found][:depth], sims, vec
    rows = rt.vault.chunks([cid for cid, _ in found])
    keep = [cid for cid, _ in found if cid in rows and _matches(rows[cid], filters)]
    return keep[:depth], sims, vec


def row_speakers(rows: Iterable[ChunkRow]) -> list[str]:
    """The speakers of the given turns, first seen first."""
    names: dict[str, None] = {}
    for row in rows:
        speaker = row.meta.get("speaker")
        if isinstance(speaker, str) and speaker.strip():
            names.setdefault(speaker.strip(), None)
    return list(names)


def speaker_names_in(query: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that the query mentions (case-insensitive), in sorted order."""
    return [n for n in sorted(names) if _name_re(n).search(query)]


def content_query(query: str, analysis: QueryAnalysis, speakers: Iterable[str], cfg: Config
                  ) -> tuple[str, QueryAnalysis | None]:
    """The query the lanes should match, with the names of ``speakers`` taken out.

    In a conversation a speaker's name heads every one of their turns, so it
    matches half the store and pulls short, empty turns ("Ann: Bye!") to the top
    of both lanes; who is asked about is left to the rerank's entity feature,
    which reads the speaker. Returns (text, its analysis), or (query, None) when
    no speaker is named or nothing would be left to match.
    """
    names = speaker_names_in(query, speakers)
    if not names:
        return query, None
    text = query
    for name in names:
        text = _name_re(name).sub(" ", text)
    text = " ".join(text.split())
    content = analyze_query(text, cfg.query)
    if not content.terms or set(content.terms) == set(analysis.terms):
        return query, None
    return text, content


def _name_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?:['\u2019]s)?(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class KeywordQuery:
    """The keyword lane's FTS5 expressions: ``match`` finds the rows; ``rescore`` holds
    words that only add their BM25 to the rows found (``Vault.keyword``)."""

    match: str
    rescore: str = ""


def keyword_match(rt: Runtime, a: QueryAnalysis, cfg: Config) -> KeywordQuery:
    """The keyword lane's query for ``a``. In stores of ``keyword_prune_min_chunks`` or
    more, FTS5's cost (it scores every row a query matches) is bounded by word counts:
    words in more than ``keyword_max_df`` of the chunks are left out (their BM25 weight
    is near zero); of the rest, the rarest words, while their chunk counts add up to at
    most ``keyword_row_budget`` (at least one word the store holds), find the rows, and
    the others only rescore the rows found (``Vault.keyword``)."""
    parts = fts_parts(a)
    s = cfg.search
    n = rt.vault.chunk_count() if len(parts) > 1 else 0
    if len(parts) < 2 or n < s.keyword_prune_min_chunks:
        return KeywordQuery(" OR ".join(parts))
    words = {p: p.strip('"*') for p in parts}
    counts = rt.vault.doc_frequency(list(words.values()))
    df = {p: counts[w.lower()] for p, w in words.items()}
    kept = [p for p in parts if df[p] <= s.keyword_max_df * n] or [min(parts, key=df.__getitem__)]
    finding: set[str] = set()
    rows = 0
    for p in sorted(kept, key=df.__getitem__):
        if rows and rows + df[p] > s.keyword_row_budget:  # words in no chunk cost nothing
            break
        finding.add(p)
        rows += df[p]
    return KeywordQuery(" OR ".join(p for p in kept if p in finding),
                        " OR ".join(p for p in kept if p not in finding))


def keyword_lane(rt: Runtime, a: QueryAnalysis, depth: int, filters: Filters,
                 cfg: Config, *, alone: bool = True) -> list[tuple[int, float]]:
    """(chunk id, BM25) of the keyword lane for ``a``, best first. ``alone``: nothing
    else runs beside it (no vector lane in its thread), so its two FTS5 queries may
    take both cores (``search.keyword_parallel``)."""
    q = keyword_match(rt, a, cfg)
    return rt.vault.keyword(q.match, depth, filters, q.rescore,
                            parallel=alone and cfg.search.keyword_parallel)


def run_lanes(rt: Runtime, query: str, *, filters: Filters | None = None,
              depth: int | None = None, analysis: QueryAnalysis | None = None,
              recency: bool | None = None, cfg: Config | None = None,
              while_waiting: Callable[[list[ChunkRow]], Any] | None = None
              ) -> LaneResult:
    """Run every lane the query calls for and fuse them (weights by query class).

    With ``while_waiting`` (callers that rerank) and ``search.read_ahead``: while the
    vector lane still runs in its thread, the keyword hits' stored vectors and rows are
    read, and ``while_waiting`` (given those rows) prepares what the caller will need of
    them (``LaneResult.prepared``), work done while this thread would otherwise wait
    for the query embedding."""
    cfg = cfg or rt.cfg
    filters = filters or Filters()
    depth = depth or cfg.search.lane_depth
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    a = analysis or analyze_query(query, cfg.query)
    timings["analysis"] = (time.perf_counter() - t0) * 1000
    lanes: dict[str, list[int]] = {}

    # The hits' rows are read here, to find which speakers the query names, only when it
    # names a speaker of the store at all (the speakers of the hits are among those).
    named = speaker_names_in(query, rt.vault.speakers()) if cfg.query.speaker_scoped else []

    # The vector lane (query embedding and index search, both outside the GIL) runs in
    # a worker thread while this thread runs the keyword lane; when the query names a
    # speaker, the vector lane waits for the keyword hits (see ``content_query``).
    hit_vectors: dict[int, np.ndarray] = {}
    vector_timings: dict[str, float] = {}
    early = (_lane_pool().submit(vector_lane, rt, query, depth, filters, vector_timings,
                                 hit_vectors)
             if cfg.search.parallel_lanes and not named else None)
    try:
        t = time.perf_counter()
        found = keyword_lane(rt, a, depth, filters, cfg, alone=early is None)
        rows: dict[int, ChunkRow] = {}
        content = query
        if named and found:
            rows = rt.vault.chunks([cid for cid, _ in found])
            content, ca = content_query(query, a, row_speakers(rows.values()), cfg)
            if ca is not None:
                found = keyword_lane(rt, ca, depth, filters, cfg, alone=early is None)
        lanes["keyword"] = [cid for cid, _ in found]
        timings["keyword"] = (time.perf_counter() - t) * 1000
        prefetched: dict[int, np.ndarray] = {}
        prepared: Any = None
        if (early is not None and while_waiting is not None
                and cfg.search.read_ahead and not early.done()):
            # the keyword lane's first half-window of hits: at the default depth (50 a
            # lane, a window of 100, no recency lane) all of them reach the rerank window;
            # otherwise some may not, and reading them was work for nothing
            ahead = lanes["keyword"][: max(1, cfg.rerank.window // 2)]
            prefetched = read_ahead(rt, ahead, rows, timings)
            if not early.done():
                t = time.perf_counter()
                prepared = while_waiting([rows[c] for c in ahead if c in rows])
                timings["prepare"] = (time.perf_counter() - t) * 1000
    finally:
        vector = early.result() if early is not None else None  # never left running
    if vector is None:
        vector = vector_lane(rt, content, depth, filters, vector_timings, hit_vectors)
    for cid, vec in prefetched.items():
        hit_vectors.setdefault(cid, vec)
    lanes["vector"], sims, qvec = vector
    timings.update(vector_timings)

    use_recency = a.temporal_recent if recency is None else recency
    if use_recency and cfg.search.recency_depth:
        t = time.perf_counter()
        lanes["recency"] = rt.vault.recent(cfg.search.recency_depth, filters)
        timings["recency"] = (time.perf_counter() - t) * 1000

    weights = lane_weights(a.qclass, cfg.query, recent=a.temporal_recent)
    fused = rrf(lanes, weights, k=cfg.search.rrf_k)
    t = time.perf_counter()
    rows.update(rt.vault.chunks([cid for cid, _, _ in fused if cid not in rows]))
    timings["fetch"] = (time.perf_counter() - t) * 1000
    fused = [f for f in fused if f[0] in rows]
    return LaneResult(a, lanes, fused, rows, sims, timings, dict(found), qvec, hit_vectors,
                      prepared)


def read_ahead(rt: Runtime, ids: list[int], rows: dict[int, ChunkRow],
               timings: dict[str, float]) -> dict[int, np.ndarray]:
    """The keyword lane's hits read while the vector lane runs in its thread: their rows
    (into ``rows``) and their stored vectors (returned; {} when the index cannot say, and
    the rerank reads what it lacks later). At 100k chunks the vectors take about 5 ms
    (one Chroma ``get``; below ``store.exact_search_max`` the in-memory exact index
    answers) that the rerank would otherwise wait for after both lanes."""
    t = time.perf_counter()
    try:
        got = rt.vectors.vectors(ids) if ids else {}
    except VectorStoreUnavailable:
        got = {}
    rows.update(rt.vault.chunks([c for c in ids if c not in rows]))
    timings["read_ahead"] = (time.perf_counter() - t) * 1000
    return got


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _lane_pool() -> ThreadPoolExecutor:
    """Threads for vector lanes, shared by every engine of the process (a few: one per
    concurrent build_context, as the IPC server's worker threads may run several)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ctx-lane")
        return _POOL


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
