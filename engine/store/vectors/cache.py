"""Every stored vector of a big store, held in memory (model space, float16).

Above ``store.exact_search_max`` vectors the HNSW index answers queries, and the
rerank needs the vectors of about a hundred candidates per build_context: read
from Chroma they cost about 5 ms of held GIL per 50 random ids (a ``get``), plus
2 ms for the hits' own vectors returned with a query, plus their un-rotation. From
this cache they are row lookups. At 100k chunks of 384 dimensions it holds 77 MB
(and room for an eighth more before it grows); it never holds more rows than its
byte bound allows.

The cache is filled once, from pages of the index (``load``, in the engine's
warm-up thread); writes that arrive meanwhile are logged and replayed when the
load ends, so it never serves a vector the index no longer holds. It answers only
once complete (``vectors`` gives None before), and gives itself up for good
(``off``) when the store outgrows its memory bound.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence

import numpy as np

log = logging.getLogger("ctx.vectors")

_DTYPE = np.float16


class VectorCache:
    def __init__(self, dim: int, max_bytes: int) -> None:
        self.dim = dim
        self.max_vectors = max_bytes // (dim * np.dtype(_DTYPE).itemsize)
        self._lock = threading.Lock()
        self._state = "empty"  # empty | loading | ready | off
        self._generation = 0  # bumped by reset: a load begun before it is dropped
        self._pending: list[tuple[str, list[int], np.ndarray | None]] = []
        self._mat: np.ndarray = np.zeros((0, dim), dtype=_DTYPE)
        self._row: dict[int, int] = {}
        self._free: list[int] = []

    @property
    def state(self) -> str:
        return self._state

    def __len__(self) -> int:
        return len(self._row)

    def nbytes(self) -> int:
        return int(self._mat.nbytes)

    # -- filling -------------------------------------------------------------------
    def load(self, size: int, pages: Iterable[tuple[Sequence[int], np.ndarray]]) -> bool:
        """Fill the cache from ``pages`` of (chunk ids, model-space vectors) of an index
        of ``size`` vectors; True when it is ready after. A store over the bound turns
        the cache off; an error while reading leaves it empty (a later load retries)."""
        with self._lock:
            if self._state != "empty":
                return self._state == "ready"
            if size > self.max_vectors:
                self._off()
                return False
            self._state, generation = "loading", self._generation
        # room for the writes of the next while (an eighth more), never past the bound
        mat: np.ndarray = np.zeros((self._capacity(size), self.dim), dtype=_DTYPE)
        row: dict[int, int] = {}
        try:
            for ids, vectors in pages:
                vecs = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
                at = len(row)
                if at + len(ids) > self.max_vectors:  # the index outgrew the bound
                    with self._lock:
                        if self._generation == generation:
                            self._off()
                    return False
                if at + len(ids) > len(mat):
                    mat = self._grown(mat, at + len(ids))
                mat[at:at + len(ids)] = vecs
                row.update((int(c), at + j) for j, c in enumerate(ids))
        except BaseException:
            with self._lock:
                if self._generation == generation:
                    self._state, self._pending = "empty", []
            raise
        with self._lock:
            if self._generation != generation:  # reset while loading
                return False
            self._mat, self._row = mat, row
            self._free = sorted(set(range(len(mat))) - set(row.values()), reverse=True) \
                if len(row) < len(mat) else []
            pending, self._pending = self._pending, []
            self._state = "ready"
            for op, ids, queued in pending:
                if op == "add":
                    assert queued is not None
                    self._add(ids, queued)
                else:
                    self._delete(ids)
            return self._state == "ready"

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Model-space vectors added to (or replaced in) the index."""
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        with self._lock:
            if self._state == "loading":
                self._pending.append(("add", [int(c) for c in ids], vecs))
            elif self._state == "ready":
                self._add([int(c) for c in ids], vecs)

    def delete(self, ids: Sequence[int]) -> None:
        with self._lock:
            if self._state == "loading":
                self._pending.append(("delete", [int(c) for c in ids], None))
            elif self._state == "ready":
                self._delete([int(c) for c in ids])

    def reset(self) -> None:
        """Forget every vector (the index was emptied); a later ``load`` fills it again."""
        with self._lock:
            self._generation += 1
            self._state, self._pending = "empty", []
            self._mat, self._row, self._free = np.zeros((0, self.dim), dtype=_DTYPE), {}, []

    def _off(self) -> None:
        """Outgrown its bound: the index answers from now on (until the store reopens)."""
        self._state, self._pending = "off", []
        self._mat, self._row, self._free = np.zeros((0, self.dim), dtype=_DTYPE), {}, []
        log.info("vector cache off: the store holds over %d vectors (store.vector_cache_mb)",
                 self.max_vectors)

    def _capacity(self, need: int) -> int:
        return max(1, min(self.max_vectors, need + max(1024, need // 8)))

    def _grown(self, mat: np.ndarray, need: int) -> np.ndarray:
        out = np.zeros((self._capacity(need), mat.shape[1]), dtype=mat.dtype)
        out[:len(mat)] = mat
        return out

    def _add(self, ids: list[int], vecs: np.ndarray) -> None:
        fresh = [c for c in dict.fromkeys(ids) if c not in self._row]
        if len(self._row) + len(fresh) > self.max_vectors:
            self._off()
            return
        if len(fresh) > len(self._free):
            start = len(self._mat)
            self._mat = self._grown(self._mat, len(self._row) + len(fresh))
            self._free += range(len(self._mat) - 1, start - 1, -1)
        for c in fresh:
            self._row[c] = self._free.pop()
        self._mat[[self._row[c] for c in ids]] = vecs

    def _delete(self, ids: list[int]) -> None:
        for c in ids:
            at = self._row.pop(c, None)
            if at is not None:
                self._free.append(at)

    # -- reading -------------------------------------------------------------------
    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray] | None:
        """The model-space vectors (float32) of those of ``ids`` held here; None until
        the cache is ready (the caller reads the index instead)."""
        if self._state != "ready":
            return None
        with self._lock:
            if self._state != "ready":
                return None
            found = [(int(c), r) for c in ids if (r := self._row.get(int(c))) is not None]
            if not found:
                return {}
            block = self._mat[[r for _, r in found]].astype(np.float32)
        return {c: block[j] for j, (c, _) in enumerate(found)}

