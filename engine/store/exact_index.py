"""Exact nearest-neighbour search over an in-memory matrix.

Used below the size where an HNSW graph pays (and always by the "memory"
backend): every score is a plain dot product of unit vectors, and ties are
broken by chunk id, so the same store and query give the same ranking in every
process (HNSW does not: chroma-core/chroma#2675).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np


class ExactIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._mat = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return self._n

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add or replace vectors (rows are normalised to unit length)."""
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms == 0, 1, norms)
        with self._lock:
            fresh = []
            for j, cid in enumerate(ids):
                row = self._row.get(int(cid))
                if row is None:
                    fresh.append(j)
                else:
                    self._mat[row] = vecs[j]
            if not fresh:
                return
            need = self._n + len(fresh)
            if need > len(self._mat):
                cap = max(need, 2 * len(self._mat), 1024)
                mat = np.zeros((cap, self.dim), dtype=np.float32)
                mat[:self._n] = self._mat[:self._n]
                ids_arr = np.zeros(cap, dtype=np.int64)
                ids_arr[:self._n] = self._ids[:self._n]
                self._mat, self._ids = mat, ids_arr
            for j in fresh:
                self._mat[self._n] = vecs[j]
                self._ids[self._n] = int(ids[j])
                self._row[int(ids[j])] = self._n
                self._n += 1

    def delete(self, ids: Sequence[int]) -> None:
        with self._lock:
            for cid in ids:
                row = self._row.pop(int(cid), None)
                if row is None:
                    continue
                last = self._n - 1
                if row != last:  # move the last row into the hole
                    self._mat[row] = self._mat[last]
                    self._ids[row] = self._ids[last]
                    self._row[int(self._ids[row])] = row
                self._mat[last] = 0
                self._n = last

    def ids(self) -> list[int]:
        with self._lock:
            return sorted(int(i) for i in self._ids[:self._n])

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (chunk id, cosine), best first, ties by chunk id."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm:
            q = q / norm
        with self._lock:
            n = self._n
            if n == 0 or k <= 0:
                return []
            scores = self._mat[:n] @ q
            ids = self._ids[:n].copy()
        if k < n:
            # everything tied with the k-th score stays in, so the cut is order-free
            kth = np.partition(scores, n - k)[n - k]
            keep = np.nonzero(scores >= kth)[0]
        else:
            keep = np.arange(n)
        order = keep[np.lexsort((ids[keep], -scores[keep]))][:k]
        return [(int(ids[i]), float(scores[i])) for i in order]
