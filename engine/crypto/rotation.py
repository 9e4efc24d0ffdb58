"""A secret orthogonal rotation of embedding vectors, derived from the data key.

Cosine similarity and dot products are unchanged (Q is orthogonal), so the
vector store ranks exactly as before; but the stored vectors are not the
model's outputs, so a public inversion model cannot read them without the key.
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

from engine.crypto.keys import derive


class Rotation:
    def __init__(self, key: bytes, dim: int) -> None:
        seed = int.from_bytes(derive(key, f"vector-rotation:{dim}"), "big")
        rng = np.random.Generator(np.random.PCG64(seed))
        q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
        q *= np.sign(np.diag(r))  # unique (Haar-distributed) orthogonal matrix
        self.dim = dim
        self._q = q  # float64: a row's result does not depend on the batch it came in

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """Rotate row vectors (n x dim) into the stored space (float32)."""
        return (np.asarray(vectors, dtype=np.float64) @ self._q).astype(np.float32)

    def invert(self, vectors: np.ndarray) -> np.ndarray:
        return (np.asarray(vectors, dtype=np.float64) @ self._q.T).astype(np.float32)


class NameHasher:
    """Keyed hashes of project and source names, for filter metadata outside the vault.
    ``kept``: the hash key a key rotation kept in the vault (engine/store/vault/rekey.py), so
    that names hash as they did under the store's first data key."""

    def __init__(self, key: bytes, kept: bytes | None = None) -> None:
        self._key = kept if kept else derive(key, "name-hash")

    def __call__(self, name: str) -> str:
        return hmac.new(self._key, name.encode("utf-8"), hashlib.sha256).hexdigest()[:24]
