"""The store's config section ([store]): where vectors live and the store's caches.

Every value that would stop the store from opening is rejected here, when the
config is built (Settings, the CLI and open all build it), with a message that
names the key; the vector store reads the Chroma server's address through the
same ``chroma_endpoint``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

from engine.errors import ConfigError

BACKENDS = ("embedded", "http", "memory")


class ChromaEndpoint(NamedTuple):
    host: str
    port: int
    ssl: bool


def chroma_endpoint(url: str) -> ChromaEndpoint:
    """The host, port and TLS of a Chroma server URL (``http(s)://host[:port]``; port 8000
    for http, 443 for https when none is given). ConfigError names ``store.chroma_url``."""
    def bad(why: str) -> ConfigError:
        return ConfigError(f"store.chroma_url must be an http(s) URL with a host and a valid "
                           f"port ({why})", key="store.chroma_url")

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise bad("the port is not a number from 1 to 65535") from None
    if parts.scheme not in ("http", "https"):
        raise bad("it must start with http:// or https://")
    if not parts.hostname:
        raise bad("no host")
    if port == 0:
        raise bad("the port is not a number from 1 to 65535")
    ssl = parts.scheme == "https"
    return ChromaEndpoint(parts.hostname, port or (443 if ssl else 8000), ssl)


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
    # The memory backend above exact_search_max (its rows then kept as float16): the rows
    # projected on prefilter_dims top principal directions are scanned first; the best
    # max(prefilter_candidates, n * prefilter_candidates_per_million / 1M) of them are
    # scored again on prefilter_fine_dims more directions, and the best prefilter_refine
    # of those exactly (0: every candidate). Origin: 22k real MiniLM vectors (SciFact,
    # LoCoMo, Python sources) grown by their covariance, 600 queries, recall@50 against
    # a float32 full scan: at 1M, 64 dims are needed (48 dims x 16k candidates 0.984);
    # 64 x 16k: 0.9955 all exact, 0.9931 refined on 128 dims to 1000; 64 x 32k: 0.998
    # (/tmp prototype of bench.memory_index, 2026-11-28); these defaults: 100k 0.9965,
    # 500k 0.9951, 1M 0.9959 (`python -m bench.memory_index --sizes --ab 100000 500000
    # 1000000`, docs/performance.md); 2000 at 100k: 0.9903, no faster.
    prefilter_dims: int = 64
    prefilter_candidates: int = 4000
    prefilter_candidates_per_million: int = 20_000
    prefilter_fine_dims: int = 64
    prefilter_refine: int = 2000
    # Above this many vectors the memory backend keeps its rows as float16 (half the
    # memory; a row's float16 rounding moves a cosine by about 1e-4). Origin: at 100k,
    # float16 rows cost 10% more CPU per query (4.6 vs 4.2 ms) for 49 MB saved; at 500k
    # they save 244 MB (`python -m bench.memory_index --sizes --ab 100000 500000`).
    float16_above: int = 200_000

    def __post_init__(self) -> None:
        if self.vector_backend not in BACKENDS:
            raise ConfigError(f"store.vector_backend must be one of {', '.join(BACKENDS)}",
                              key="store.vector_backend")
        if self.vector_backend == "http":  # the only backend that reads it
            chroma_endpoint(self.chroma_url)
        for key, value, lo, hi in (("exact_search_max", self.exact_search_max, 0, 1_000_000),
                                   ("hnsw_ef_search", self.hnsw_ef_search, 8, 2048),
                                   ("vault_cache_mb", self.vault_cache_mb, 1, 16384),
                                   ("vector_cache_mb", self.vector_cache_mb, 0, 65536),
                                   ("prefilter_dims", self.prefilter_dims, 0, 384),
                                   ("prefilter_candidates", self.prefilter_candidates, 100,
                                    1_000_000),
                                   ("prefilter_candidates_per_million",
                                    self.prefilter_candidates_per_million, 0, 1_000_000),
                                   ("prefilter_fine_dims", self.prefilter_fine_dims, 0, 384),
                                   ("prefilter_refine", self.prefilter_refine, 0, 1_000_000),
                                   ("float16_above", self.float16_above, 0, 10**9)):
            if not lo <= value <= hi:
                raise ConfigError(f"store.{key} must be between {lo} and {hi}",
                                  key=f"store.{key}")
