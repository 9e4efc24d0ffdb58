"""The embedder interface every model implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dim`` dimensions."""

    name: str  # recorded in the store; a store refuses vectors from another model

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch: an array of shape (len(texts), dim)."""
        ...


def encode_documents(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of texts to store: the embedder's ``encode_documents`` when it has one
    (the ONNX embedder's int8 model), else ``encode``."""
    encode = getattr(embedder, "encode_documents", None)
    return encode(texts) if encode is not None else embedder.encode(texts)
