"""The open store's parts, shared by search, build_context, recall and ingestion."""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.config import Config
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder
from engine.metrics import Metrics
from engine.store.vault import Vault
from engine.store.vectors import VectorStore
from engine.tokens import TokenCounter


@dataclass
class Runtime:
    cfg: Config
    root: Path
    vault: Vault
    vectors: VectorStore
    embedder: Embedder
    counter: TokenCounter
    hasher: NameHasher
    metrics: Metrics
    _qcache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict)
    _qlock: threading.Lock = field(default_factory=threading.Lock)
    _cross: dict[str, Any] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None

    def cross_encoder(self, path: str) -> Any:
        """The local cross-encoder reranker at ``path``, loaded once (ConfigError if absent)."""
        with self._qlock:
            if path not in self._cross:
                from engine.retrieval.rerank import CrossEncoderConfig, CrossEncoderReranker

                self._cross[path] = CrossEncoderReranker(CrossEncoderConfig(model_path=path))
            return self._cross[path]

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector, from a small LRU cache when it was asked before."""
        with self._qlock:
            hit = self._qcache.get(text)
            if hit is not None:
                self._qcache.move_to_end(text)
                return hit
        vec = self.embedder.encode([text])[0]
        size = self.cfg.embedding.query_cache_size
        if size:
            with self._qlock:
                self._qcache[text] = vec
                while len(self._qcache) > size:
                    self._qcache.popitem(last=False)
        return vec

    def embed_query_async(self, text: str) -> Future[np.ndarray]:
        """``embed_query`` on a worker thread, so a caller can run a keyword lane meanwhile
        (the model and SQLite both release the GIL; the machine has two cores)."""
        with self._qlock:
            hit = self._qcache.get(text)
            if hit is None and self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="ctx-query-embed")
        if hit is not None:
            done: Future[np.ndarray] = Future()
            done.set_result(hit)
            return done
        assert self._pool is not None
        return self._pool.submit(self.embed_query, text)

    def close(self) -> None:
        """Stop the query worker (the vault and vector store are closed by their owner)."""
        with self._qlock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
