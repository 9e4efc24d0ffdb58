"""The search config section ([search]): lane depths, fusion and the lanes' bounds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError
from engine.limits import MAX_LIVE_BYTES, MAX_LIVE_ITEMS, MAX_QUERY_CHARS


@dataclass(frozen=True)
class SearchConfig:
    """Lane depths and fusion for search and build_context.

    Ranking constants and where each value came from (the rerank's per-kind
    weights are in ``engine.retrieval.profiles``, fitted by ``bench/fit_rank.py``):
    """

    # Reciprocal rank fusion constant: k = 60 from Cormack, Clarke and Buettcher
    # (SIGIR 2009), the value BEIR-style hybrid baselines use; the rerank's fused
    # feature is fitted on top of it, so it is not tuned here.
    rrf_k: int = 60
    # Hits per lane: the seed's value, kept after a check on LoCoMo dev (759 questions,
    # `CTX__SEARCH__LANE_DEPTH=N python -m bench.locomo --split dev --store-cache DIR`):
    # recall@10 / ctx@500 / ctx@1000 / ctx@2000 at 50: 0.792 / 0.812 / 0.874 / 0.919;
    # at 35: 0.785 / 0.815 / 0.868 / 0.914; at 25: 0.779 / 0.809 / 0.869 / 0.912. A
    # shallower lane is cheaper (35 took build_context at 100k chunks to 0.89x p50,
    # 0.81x p95: bench.stage_latency --ab) but costs quality. The rerank window is the
    # fused top 100, which two lanes of 50 fill.
    lane_depth: int = 50
    # Cosine at or above which a lower-ranked chunk is a near-duplicate of a kept one:
    # the seed's value, kept after a check on both kinds of memory (`CTX__SEARCH__
    # DEDUPE_THRESHOLD=T python -m bench.locomo --split dev --store-cache DIR` and
    # `... bench.scifact --store-cache DIR`, train): relevant in payload @500/1000/2000
    # on SciFact train 0.750/0.807/0.862 at 0.85, 0.747/0.803/0.860 at 0.9,
    # 0.747/0.802/0.860 at 0.95; LoCoMo dev ctx@500/1000/2000 0.811/0.874/0.914 at
    # 0.85, 0.812/0.874/0.919 at 0.9 and at 0.95 (recall@10 0.792 in all). Overlap of
    # neighbouring chunks of one source is removed separately (engine.packing.overlap).
    dedupe_threshold: float = 0.9
    recency_depth: int = 30  # newest chunks in the recency lane (temporal queries only)
    max_live_items: int = MAX_LIVE_ITEMS  # engine/limits.py, the wire's limits too
    max_live_bytes: int = MAX_LIVE_BYTES
    max_query_chars: int = MAX_QUERY_CHARS
    cross_encoder_path: str = ""
    # Keyword lane bounds, in stores of keyword_prune_min_chunks or more (FTS5 scores every
    # row a query matches, about 1 us a row here): words in more than keyword_max_df of
    # the chunks leave the FTS query; of the rest, the rarest words find the rows while
    # their chunk counts add up to at most keyword_row_budget, and the others only
    # rescore the rows found (engine.retrieval.fts_match.keyword_match). Chosen by
    # `python -m bench.keyword_lane STORE --budgets 1000,1500,2000 --max-dfs 0.1,0.15,0.2`
    # on the 100k-chunk store of `bench.stage_latency --build 100000` (300 queries, each
    # drawn from a chunk; quality = that chunk in the lane's top 50; 2-core VM, load
    # 0.6-0.8): every word 0.907 at p95 122 ms; words over 5% left out (the bound before)
    # 0.853 at 16 ms; these values 0.887 at 8.9 ms (max_df 0.15: 0.893 at 9.4 ms,
    # 0.2: 0.897 at 10.8 ms). SciFact (11k chunks) and LoCoMo stores are smaller than
    # 50k: there every word finds rows (leaving words over 5% out cost 0.014 nDCG@10 on
    # SciFact, issue 12, with no latency gain).
    keyword_max_df: float = 0.1
    keyword_prune_min_chunks: int = 50_000
    keyword_row_budget: int = 2000
    # The keyword lane's two FTS5 queries (finding and rescoring) at the same time, on
    # two connections, when the lane runs alone (no vector lane beside it: a query
    # naming a speaker, parallel_lanes off, a direct keyword_lane call). At 100k chunks
    # the lane alone went to 0.85x p50 and 0.84x p95, the same hits for 300 of 300
    # queries (a /tmp A/B, each query both ways in turn, 2026-11-23, load 0.6-0.9).
    # Beside the vector lane the second core is embedding the query: there it made
    # build_context 1.03x p50 and 1.12x p95 slower (`python -m bench.stage_latency
    # STORE --store-model fake --ab search.keyword_parallel=false`, when it applied to
    # both), so there the two queries run one after the other.
    keyword_parallel: bool = True
    # search(distinct_sources=True) reads this many times more lane hits, so that k
    # distinct sources survive when sources have several matching chunks (SciFact:
    # 100 chunk hits hold about 76 distinct abstracts, issue 12; 3x leaves room).
    distinct_depth_factor: int = 3
    # Threads numpy's BLAS may use (0: leave it alone). The ranking's matrix products are
    # tiny (a 130 x 384 window); with 2 OpenBLAS threads on the shared 2-core machine one
    # such product took a median 119 ms (threads spinning for a busy core) against 0.19 ms
    # in one thread (issue 12, measured with threadpoolctl). Set once per process.
    blas_threads: int = 1
    # Run the vector lane (query embedding, index search) in a thread beside the keyword
    # lane: both wait outside the GIL (onnxruntime, SQLite), so on two cores the slower
    # of the two, not their sum, is paid (bench/stage_latency.py, issue 12).
    parallel_lanes: bool = True
    # While the vector lane still runs, read the keyword lane's hits (their stored
    # vectors and rows) and scan them for the rerank (engine.flows.lanes.lane_stage):
    # that work then runs beside the query embedding instead of after it. At 100k chunks,
    # off / on: build_context p50 1.14x / p95 1.10x (`python -m bench.stage_latency
    # /tmp/rank-cache/big100k --store-model fake --ab search.read_ahead=false`, 200
    # queries, 2026-11-23, load 0.7-0.9); SciFact's 10k chunks: 1.16x / 1.05x.
    read_ahead: bool = True

    def __post_init__(self) -> None:
        for key, value, lo, hi in (("rrf_k", self.rrf_k, 1, 1000),
                                   ("lane_depth", self.lane_depth, 1, 1000),
                                   ("dedupe_threshold", self.dedupe_threshold, 0.5, 1.0),
                                   ("blas_threads", self.blas_threads, 0, 256),
                                   ("distinct_depth_factor", self.distinct_depth_factor, 1, 20)):
            if not lo <= value <= hi:
                raise ConfigError(f"search.{key} must be between {lo} and {hi}",
                                  key=f"search.{key}")
        if not 0.0 < self.keyword_max_df <= 1.0:
            raise ConfigError("search.keyword_max_df must be in (0, 1]",
                              key="search.keyword_max_df")
        for key in ("keyword_prune_min_chunks", "recency_depth", "max_live_items",
                    "max_live_bytes"):
            if getattr(self, key) < 0:
                raise ConfigError(f"search.{key} must be >= 0", key=f"search.{key}")
        if self.keyword_row_budget < 1:
            raise ConfigError("search.keyword_row_budget must be >= 1",
                              key="search.keyword_row_budget")
        if self.cross_encoder_path and not Path(self.cross_encoder_path).expanduser().is_dir():
            # loaded from disk only, never by a hub name (``CrossEncoderReranker``)
            raise ConfigError("search.cross_encoder_path is not a local directory "
                              "(a cross-encoder saved to a folder)",
                              key="search.cross_encoder_path")
