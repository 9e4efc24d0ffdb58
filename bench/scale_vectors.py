"""Document vectors that look like MiniLM's, made without the model (for grown stores).

``MiniLMLike`` embeds a text as a draw from the mean and covariance of real MiniLM
document vectors (``bench.memory_index.real_vectors``: SciFact abstracts, LoCoMo
turns, Python sources; cached), seeded by the text's hash: the same text gets the
same vector in any batch, and a store of a million of them has MiniLM's spread of
directions (what the vector index's prefilter depends on), at thousands of texts a
second. It records the model's own name and dimension, so the store it fills opens
with the real model (which then embeds the queries). Its vectors carry no meaning:
the vector lane's hits are not relevant ones, and its cost is the real lane's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

SAMPLE = 22000  # real MiniLM vectors the covariance is taken from (memory_index's cache)


class MiniLMLike:
    backend = "bench"

    def __init__(self, sample: np.ndarray | None = None) -> None:
        from engine.lab import MODEL_NAME

        if sample is None:
            from bench.memory_index import real_vectors

            sample = real_vectors(SAMPLE)[0]
        x = np.asarray(sample, dtype=np.float64)
        ev, vecs = np.linalg.eigh(np.cov(x.T))
        self._scale = np.sqrt(np.clip(ev, 0.0, None))
        self._basis = vecs.T
        self._mean = x.mean(0)
        self.name = MODEL_NAME
        self.calls = 0

    @property
    def dim(self) -> int:
        return int(self._mean.shape[0])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):  # one row at a time: no batch-shaped BLAS path
            z = np.random.default_rng(_seed(text)).standard_normal(self.dim)
            v = (z * self._scale) @ self._basis + self._mean
            out[row] = v / np.linalg.norm(v)
        return out


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
