"""A deterministic, dependency-free embedder for unit tests (feature hashing).

Words and character trigrams are hashed into ``dim`` buckets with signs, so
texts sharing words land near each other. Not a language model: tests that
need meaning use the real one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    backend = "fake"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"fake-hash-{dim}"
        self.calls = 0
        self.texts_embedded = 0

    def _bucket(self, token: str) -> tuple[int, float]:
        return _bucket(token, self.dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for w in words:
                i, s = self._bucket("w:" + w)
                out[row, i] += 2.0 * s
                padded = f"#{w}#"
                for j in range(len(padded) - 2):
                    i, s = self._bucket("t:" + padded[j:j + 3])
                    out[row, i] += 0.5 * s
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


@lru_cache(maxsize=1 << 18)
def _bucket(token: str, dim: int) -> tuple[int, float]:
    h = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    n = int.from_bytes(h, "little")
    return n % dim, 1.0 if (n >> 32) & 1 else -1.0
