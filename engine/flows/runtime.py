"""The open store's parts, shared by search, build_context, recall and ingestion."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.config import Config
from engine.crypto.rotation import NameHasher
from engine.embedding.base import Embedder
from engine.flows.audit_log import AuditLog
from engine.metrics import Metrics
from engine.store.vault.core import Vault
from engine.store.vectors.index import VectorStore
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
    audit: AuditLog  # every audit record goes through it (written behind the calls)
    _qcache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict)
    _qlock: threading.Lock = field(default_factory=threading.Lock)
    _cross: dict[str, Any] = field(default_factory=dict)
    # recall's learned reader as loaded from the vault (engine.flows.recall.adapt)
    adapt_cache: dict[str, Any] = field(default_factory=dict)

    def cross_encoder(self, path: str) -> Any:
        """The local cross-encoder reranker at ``path``, loaded once (ConfigError if absent)."""
        with self._qlock:
            if path not in self._cross:
                from engine.retrieval.config import CrossEncoderConfig
                from engine.retrieval.rerank import CrossEncoderReranker

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
