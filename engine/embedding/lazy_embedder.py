"""An embedder that loads its model on first use, so commands that never embed stay fast."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.embedding.base import Embedder, encode_documents
from engine.embedding.config import EmbeddingConfig


def model_name(cfg: EmbeddingConfig) -> str:
    """The name recorded in the store for the model ``cfg`` selects (no loading)."""
    model = cfg.model.strip()
    if model == "fake" or model.startswith("fake:"):
        return f"fake-hash-{model.split(':', 1)[1] if ':' in model else 384}"
    if model in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        return "all-MiniLM-L6-v2"
    return f"local:{Path(model).expanduser().name}"


KNOWN_DIMS = {"all-MiniLM-L6-v2": 384}


class LazyEmbedder:
    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.name = model_name(cfg)
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    def load(self) -> Embedder:
        with self._lock:
            if self._inner is None:
                from engine.embedding.factory import make_embedder

                self._inner = make_embedder(self.cfg)
            return self._inner

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    @property
    def backend(self) -> str | None:
        """The runtime that embeds ("onnx", "torch", "fake"), once the model is loaded."""
        return getattr(self._inner, "backend", None) if self._inner is not None else None

    @property
    def backend_reason(self) -> str:
        """The runtime the model runs (or will run) on and why (``factory.backend_reason``)."""
        from engine.embedding.factory import backend_reason

        return backend_reason(self.cfg)

    @property
    def document_precision(self) -> str | None:
        """"int8" or "float32": the model documents run on, once the model is loaded."""
        if self._inner is None:
            return None
        return getattr(self._inner, "document_precision", "float32")

    @property
    def query_precision(self) -> str | None:
        """"int8" or "float32": the model queries run on, once the model is loaded."""
        if self._inner is None:
            return None
        return getattr(self._inner, "query_precision", "float32")

    @property
    def inner(self) -> Embedder:
        return self.load()

    @property
    def dim(self) -> int:
        if self._inner is None:
            if self.name in KNOWN_DIMS:
                return KNOWN_DIMS[self.name]
            if self.name.startswith("fake-hash-"):
                return int(self.name.rsplit("-", 1)[1])
        return self.load().dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().encode(texts)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return encode_documents(self.load(), texts)

    def close(self) -> None:
        """Let the loaded model go (its worker threads stop); a later encode loads it again."""
        with self._lock:
            inner, self._inner = self._inner, None
        close = getattr(inner, "close", None)
        if close is not None:
            close()
