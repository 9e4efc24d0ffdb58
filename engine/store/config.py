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

from engine.config_base import bounded, check_bounds
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
    hnsw_ef_search: int = bounded(64, 8, 2048)
    vault_cache_mb: int = bounded(64, 1, 16384)
    # up to this many vectors, an exact search in memory; hand-set (docs/tuning.md)
    exact_search_max: int = bounded(20_000, 0, 1_000_000)
    # MB of float16 vectors held for the rerank (0: never): stage_latency --ab (docs/tuning.md)
    vector_cache_mb: int = bounded(256, 0, 65536)
    # the memory backend's prefilter: bench.memory_index (docs/tuning.md, docs/performance.md)
    prefilter_dims: int = bounded(64, 0, 384)
    prefilter_candidates: int = bounded(4000, 100, 1_000_000)
    prefilter_candidates_per_million: int = bounded(20_000, 0, 1_000_000)
    prefilter_fine_dims: int = bounded(64, 0, 384)
    prefilter_refine: int = bounded(2000, 0, 1_000_000)
    # rows as float16 above this many vectors: bench.memory_index --sizes --ab (docs/tuning.md)
    float16_above: int = bounded(200_000, 0, 10**9)

    def __post_init__(self) -> None:
        if self.vector_backend not in BACKENDS:
            raise ConfigError(f"store.vector_backend must be one of {', '.join(BACKENDS)}",
                              key="store.vector_backend")
        if self.vector_backend == "http":  # the only backend that reads it
            chroma_endpoint(self.chroma_url)
        check_bounds(self, "store")
