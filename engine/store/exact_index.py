"""Nearest-neighbour search over an in-memory matrix.

Used below the size where an HNSW graph pays, and by the "memory" backend at any
size: every score is a plain dot product of unit vectors, and ties are broken by
chunk id, so the same store and query give the same ranking in every process
(HNSW does not: chroma-core/chroma#2675).

A big index may get a prefilter (``set_prefilter``): the rows projected on the
top principal directions of the stored vectors (a few dozen of 384), scanned
first; only the best ``candidates`` of that scan are scored exactly. At 100k
rows that reads a sixth of the matrix; the hits it misses against the full scan
are measured by ``bench.memory_index``.
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
        self._basis: np.ndarray | None = None  # dim x m: the prefilter's directions
        self._proj = np.zeros((0, 0), dtype=np.float32)  # rows projected on the basis
        self._candidates = 0

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
                    if self._basis is not None:
                        self._proj[row] = vecs[j] @ self._basis
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
                if self._basis is not None:
                    proj = np.zeros((cap, self._basis.shape[1]), dtype=np.float32)
                    proj[:self._n] = self._proj[:self._n]
                    self._proj = proj
            at = self._n
            self._mat[at:need] = vecs[[fresh[c] for c in order]]
            self._ids[at:need] = order
            if self._basis is not None:
                self._proj[at:need] = self._mat[at:need] @ self._basis
            self._n = need
            if at and order[0] < self._ids[at - 1]:  # not an append: restore id order
                perm = np.argsort(self._ids[:need], kind="stable")
                self._mat[:need] = self._mat[:need][perm]
                self._ids[:need] = self._ids[:need][perm]
                if self._basis is not None:
                    self._proj[:need] = self._proj[:need][perm]
                self._row = {int(c): i for i, c in enumerate(self._ids[:need])}
            else:
                self._row.update((c, at + i) for i, c in enumerate(order))

    def load(self, ids: np.ndarray, vectors: np.ndarray, *, unit: bool = False) -> None:
        """Replace everything with these rows at once (a snapshot read, a rebuild): a
        whole-array path, 100k rows in well under a second. ``unit``: the rows are
        already unit vectors (the index's own, sealed)."""
        order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
        ids_arr = np.ascontiguousarray(np.asarray(ids, dtype=np.int64)[order])
        if len(ids_arr) and np.any(ids_arr[1:] == ids_arr[:-1]):
            raise ValueError("duplicate chunk ids")
        mat = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32)[order])
        if not unit and len(mat):
            norms = np.sqrt(np.einsum("ij,ij->i", mat, mat))[:, None]
            mat /= np.where(norms == 0, 1, norms)
        with self._lock:
            self._mat, self._ids, self._n = mat, ids_arr, len(ids_arr)
            self._row = dict(zip(ids_arr.tolist(), range(len(ids_arr)), strict=True))
            basis, self._basis = self._basis, None
        if basis is not None:
            self.set_prefilter(basis, self._candidates)

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
            if self._basis is not None:
                self._proj[:left] = self._proj[:n][keep]
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

    def ids_and_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id (ascending) and its unit vector, copied (for a snapshot)."""
        with self._lock:
            return self._ids[:self._n].copy(), self._mat[:self._n].copy()

    def set_prefilter(self, basis: np.ndarray | None, candidates: int) -> None:
        """Scan the rows projected on ``basis`` (dim x m, orthonormal columns) first and
        score only the best ``candidates`` of them exactly; None: every row exactly."""
        with self._lock:
            if basis is None:
                self._basis, self._proj, self._candidates = None, np.zeros((0, 0), np.float32), 0
                return
            b = np.ascontiguousarray(basis, dtype=np.float32)
            proj = np.zeros((len(self._mat), b.shape[1]), dtype=np.float32)
            proj[:self._n] = self._mat[:self._n] @ b
            self._basis, self._proj, self._candidates = b, proj, int(candidates)

    @property
    def prefiltered(self) -> bool:
        return self._basis is not None

    def sample(self, most: int) -> np.ndarray:
        """Up to ``most`` rows, evenly spread over the id order (the same set gives the
        same sample), copied."""
        with self._lock:
            step = max(1, self._n // max(1, most))
            return self._mat[:self._n:step][:most].copy()

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (chunk id, cosine), best first, ties by chunk id (with a
        prefilter, among the candidates it keeps)."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm:
            q = q / norm
        with self._lock:
            n = self._n
            if n == 0 or k <= 0:
                return []
            if self._basis is not None and n > max(self._candidates, k):
                coarse = self._proj[:n] @ (q @ self._basis)
                cand = np.sort(np.argpartition(coarse, n - self._candidates)
                               [n - self._candidates:])
                scores = self._mat[cand] @ q
                ids = self._ids[cand]
                n = len(cand)
            else:
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
