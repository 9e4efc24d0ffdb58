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
        """Add or replace vectors (rows are normalised to unit length).

        Rows stay sorted by chunk id, so the same set of vectors always has the same
        layout and every score comes out bit for bit the same, however it was built.
        """
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms == 0, 1, norms)
        with self._lock:
            fresh: dict[int, int] = {}
            for j, cid in enumerate(ids):
                row = self._row.get(int(cid))
                if row is None:
                    fresh[int(cid)] = j
                else:
                    self._mat[row] = vecs[j]
            if not fresh:
                return
            order = sorted(fresh)
            need = self._n + len(order)
            if need > len(self._mat):
                cap = max(need, 2 * len(self._mat), 1024)
                mat = np.zeros((cap, self.dim), dtype=np.float32)
                mat[:self._n] = self._mat[:self._n]
                ids_arr = np.zeros(cap, dtype=np.int64)
                ids_arr[:self._n] = self._ids[:self._n]
                self._mat, self._ids = mat, ids_arr
            at = self._n
            self._mat[at:need] = vecs[[fresh[c] for c in order]]
            self._ids[at:need] = order
            self._n = need
            if at and order[0] < self._ids[at - 1]:  # not an append: restore id order
                perm = np.argsort(self._ids[:need], kind="stable")
                self._mat[:need] = self._mat[:need][perm]
                self._ids[:need] = self._ids[:need][perm]
                self._row = {int(c): i for i, c in enumerate(self._ids[:need])}
            else:
                self._row.update((c, at + i) for i, c in enumerate(order))

    def delete(self, ids: Sequence[int]) -> None:
        with self._lock:
            rows = sorted({self._row.pop(int(c)) for c in ids if int(c) in self._row})
            if not rows:
                return
            n = self._n
            keep = np.ones(n, dtype=bool)
            keep[rows] = False
            left = int(keep.sum())
            self._mat[:left] = self._mat[:n][keep]
            self._ids[:left] = self._ids[:n][keep]
            self._mat[left:n] = 0
            self._n = left
            self._row = {int(c): i for i, c in enumerate(self._ids[:left])}

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The (unit) vectors of those of ``ids`` held here, copied."""
        with self._lock:
            rows = {int(c): self._row[int(c)] for c in ids if int(c) in self._row}
            return {c: self._mat[r].copy() for c, r in rows.items()}

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
