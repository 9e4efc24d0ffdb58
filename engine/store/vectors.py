"""The vector side: Chroma (embedded, or a server over HTTP) holding rotated vectors.

Only chunk ids, rotated embeddings and filter metadata (source id, kinds, time,
keyed hashes of project and source names) go to Chroma; never text.
Chroma's metadata filters are slow (brute force), so filtered queries
over-fetch and the caller post-filters against the vault.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from engine.config import StoreConfig
from engine.crypto.rotation import Rotation
from engine.errors import ConfigError, VectorStoreUnavailable

log = logging.getLogger("ctx.vectors")

# Keep Chroma from ever phoning home, whatever its settings default to.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


class VectorStore:
    def __init__(self, cfg: StoreConfig, path: Path, rotation: Rotation, collection: str) -> None:
        import chromadb

        self.rotation = rotation
        self.backend = cfg.vector_backend
        try:
            if cfg.vector_backend == "http":
                url = urlparse(cfg.chroma_url)
                if url.scheme not in ("http", "https") or not url.hostname:
                    raise ConfigError("store.chroma_url must be an http(s) URL")
                self._client = chromadb.HttpClient(
                    host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https", settings=_settings())
            else:
                self._client = chromadb.PersistentClient(path=str(path), settings=_settings())
            self._col = self._client.get_or_create_collection(
                collection, embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": cfg.hnsw_ef_search}},
            )
        except ConfigError:
            raise
        except Exception as exc:
            raise VectorStoreUnavailable(
                f"vector store ({cfg.vector_backend}) not reachable: {type(exc).__name__}"
            ) from exc

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise VectorStoreUnavailable(f"vector store {what} failed: {type(exc).__name__}") \
                from exc

    def add(self, ids: Sequence[int], vectors: np.ndarray, metas: Sequence[dict[str, Any]]) -> None:
        if not len(ids):
            return
        rotated = self.rotation.apply(vectors)
        for i in range(0, len(ids), 2000):
            self._call("add", self._col.upsert, ids=[str(x) for x in ids[i:i + 2000]],
                        embeddings=rotated[i:i + 2000], metadatas=list(metas[i:i + 2000]))

    def delete_source(self, source_id: int) -> None:
        self._call("delete", self._col.delete, where={"source_id": int(source_id)})

    def delete(self, ids: Sequence[int]) -> None:
        if ids:
            self._call("delete", self._col.delete, ids=[str(x) for x in ids])

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Nearest chunks to ``vector`` (model space): (chunk id, cosine similarity).

        Chroma answers a query for more results than it holds with what it has, so
        no count is needed first (a round trip per query); only if a backend refuses
        is the request clamped to its count and retried.
        """
        if k <= 0:
            return []
        q = self.rotation.apply(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        try:
            res = self._col.query(query_embeddings=q, n_results=k, include=["distances"])
        except Exception:  # noqa: BLE001 - a refusal: clamp to the count and retry once
            n = self.count()
            if n == 0:
                return []
            res = self._call("query", self._col.query, query_embeddings=q, n_results=min(k, n),
                             include=["distances"])
        ids, dists = res["ids"][0], res["distances"][0]
        return [(int(i), 1.0 - float(d)) for i, d in zip(ids, dists, strict=True)]

    def count(self) -> int:
        return int(self._call("count", self._col.count))

    def healthy(self) -> bool:
        try:
            self._col.count()
            return True
        except Exception:  # noqa: BLE001 - health probe: any failure is "down"
            return False
