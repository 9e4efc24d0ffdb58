"""The store's config section ([store]): where vectors live and the store's caches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.errors import ConfigError


@dataclass(frozen=True)
class StoreConfig:
    """Where vectors live: ``memory`` (the default): in memory only, saved sealed with
    the data key (vectors.snap) and rebuilt from the vault when that is missing or
    stale; ``embedded``: a Chroma store in vectors/ (rotated vectors in the clear: see
    docs/threat-model.md); ``http``: a Chroma server."""

    vector_backend: Literal["embedded", "http", "memory"] = "memory"
    chroma_url: str = "http://127.0.0.1:8000"
    hnsw_ef_search: int = 64
    vault_cache_mb: int = 64
    # Up to this many vectors, Chroma queries are answered by an exact search in memory
    # (deterministic across processes, chroma-core/chroma#2675). Origin: brute force over
    # 20k x 384 float32 is under a millisecond here, below HNSW's cost at that size.
    exact_search_max: int = 20_000
    # Above exact_search_max, every vector is held in memory as float16 (model space) for
    # the rerank, up to this many MB (0: never; a bigger store reads them from Chroma):
    # 77 MB at 100k chunks, enough for about 350k. Origin: at 100k chunks, with it /
    # without it, build_context p50 31.8 / 38.9 ms, p95 43.2 / 50.5 ms (`python -m
    # bench.stage_latency STORE --store-model fake --ab store.vector_cache_mb=0`, 300
    # queries, 2026-11-23, load 0.7-1.0); a prototype gave the same payload for 298 of
    # 300 queries (float16 similarities move a few near-ties).
    vector_cache_mb: int = 256
    # The memory backend above exact_search_max: the rows projected on this many top
    # principal directions are scanned first, and this many of the best are scored
    # exactly. Origin: at 100k vectors (22k real MiniLM vectors of SciFact, LoCoMo and
    # Python sources, 78k drawn from their covariance) recall@50 against the full scan
    # 0.997, p50 5.0 ms against 19.6 (load 6; 2000 candidates: 0.992; 96 dims: 0.9997,
    # 7.6 ms) (`python -m bench.memory_index`).
    prefilter_dims: int = 64
    prefilter_candidates: int = 4000

    def __post_init__(self) -> None:
        if not 0 <= self.exact_search_max <= 1_000_000:
            raise ConfigError("store.exact_search_max must be between 0 and 1000000")
        if not 8 <= self.hnsw_ef_search <= 2048:
            raise ConfigError("store.hnsw_ef_search must be between 8 and 2048")
        if not 1 <= self.vault_cache_mb <= 16384:
            raise ConfigError("store.vault_cache_mb must be between 1 and 16384")
        if not 0 <= self.vector_cache_mb <= 65536:
            raise ConfigError("store.vector_cache_mb must be between 0 and 65536")
        if not 0 <= self.prefilter_dims <= 384:
            raise ConfigError("store.prefilter_dims must be between 0 (off) and 384")
        if not 100 <= self.prefilter_candidates <= 1_000_000:
            raise ConfigError("store.prefilter_candidates must be between 100 and 1000000")
