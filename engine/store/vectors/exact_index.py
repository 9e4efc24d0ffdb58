"""Nearest-neighbour search over an in-memory matrix.

Used below the size where an HNSW graph pays, and by the "memory" backend at any
size: every score is a plain dot product of unit vectors, and ties are broken by
chunk id, so the same store and query give the same ranking in every process
(HNSW does not: chroma-core/chroma#2675).

A big index may get a prefilter (``set_prefilter``): the rows projected on the
top principal directions of the stored vectors (a few dozen of 384), scanned
first; only the best ``candidates`` of that scan are scored exactly. The hits it
misses against the full scan are measured by ``bench.memory_index``. The best are
picked above a threshold read off a sample of the scores (``select.cut``), the same
set as an ``np.argpartition`` of them all; where a tie crosses a cut and the pick among
the tied rows could change the answer, the argpartition decides, as before.

Its rows may be kept as float16 (``compact``): half the memory of float32, every
score still computed in float32 from them (a row's float16 rounding moves a cosine
by about 1e-4 at most); a full scan then converts them a block at a time.

Rows stay sorted by chunk id and are found by a binary search (no per-row Python
object: at a million rows a dict of them would cost over 100 MB). Rows added far below
the last ids (more than ``TAIL_ROWS`` held rows after them: a crash's leftovers embedded
after a restart) go to a small side block instead, also sorted by id, that every read
looks at too: such an add costs what it adds, not a copy of every row. A query treats
the two as the one merged id order (the prefilter's candidates are picked from the
merged order, every row's score is computed the same wherever it lies: ``score_rows``), so
the answers are those of the merged index. The side block is merged into the main
arrays in place (no second copy of them; the read lock held alone while rows move)
when it passes ``SIDE_ROWS`` rows and before a seal (``held``), so a snapshot's
layout is as before.

Readers never wait for a rebuild (issue 32): a write that moves every row (a delete,
a prefilter set up, float16 rows) builds new arrays with
only the write lock held and swaps them in under the read lock (copy-on-write), so
a search that arrives meanwhile answers from the arrays as they were. Writes are
one at a time (``_write``); the read lock (``_lock``, a ``SharedLock``) is held shared
by a query's scan and the other reads (a lookup of stored vectors need not wait for a
scan: build_context reads the keyword hits' vectors while the vector lane scans), and
alone by a swap and the small in-place writes of an add (rows replaced or appended, or
the last ``TAIL_ROWS`` rows moved up to let rows of lower ids in). The side block's
merge is the one in-place write that may move every row (at a million float16 rows,
70 ms to 0.2 s: ``bench.far_add``): it runs once per ``SIDE_ROWS`` rows set aside and at a
seal, where a copy-on-write rebuild would hold a second copy of every row (1 GB at a
million) for each far add.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from engine.store.vectors.select import as_float32, cut
from engine.store.vectors.shared_lock import SharedLock

SCAN_BLOCK = 16_384  # float16 rows converted at a time by a full scan (12 MB of float32)
# An add out of id order moves the held rows after its first id in place when they are
# this few (a window of sources embedded out of order: a few thousand rows at the end),
# else it rebuilds every row: at a million rows a rebuild per add made ingest quadratic.
TAIL_ROWS = 16_384
# Rows added farther below than that wait in the side block (scanned by every query
# beside the main rows) until it holds this many; then it is merged in place. At 384
# dims this many float16 rows are 48 MB; merging moves the rows above the lowest of them
# (up to every row: 0.2-1 s at a million) once per this many, not once per add.
SIDE_ROWS = 65_536
GROUP = 16  # rows a product is computed over at a time (see ``score_rows``)
# A query gathers and scores its candidates' rows a block at a time, each block's
# temporaries at most this many bytes (scored by ``score_rows`` as any gather is, so every
# row to the same bits), and writes its coarse scores into a buffer the index keeps: at a
# million rows a query's five arrays of a MiB or more (20 MB) took a third of its time,
# since the engine fixes glibc's mmap threshold (engine/embedding/heap.py) and each was
# mapped and its pages zeroed afresh. Left as they were: a side block's coarse scores
# (``np.insert``), the rare fallbacks (``_candidates_by_partition``, ``cut``'s whole
# partition), and ``cut``'s one byte a row past 1,048,576 rows.
BLOCK_BYTES = 1 << 19
SPARE_BUFFERS = 2  # coarse scores' buffers kept for the next queries (4.5 MB each at 1M)


def block_rows(row_bytes: int) -> int:
    """Rows a block holds when each takes ``row_bytes`` in its largest temporary."""
    return max(GROUP, BLOCK_BYTES // max(1, row_bytes) // GROUP * GROUP)


def score_rows(rows: np.ndarray, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``rows @ q`` (float32), each row's value the same wherever the row lies; written
    into ``out`` (float32, one per row) when given.

    OpenBLAS's matrix-vector kernel takes rows a few at a time and the last one to three
    by another loop that sums in another order: a row's score differed in its last bit
    by where it lay. Here the rows are taken ``GROUP`` at a time from the first, and the
    last ones in a padded group, so a row scores the same in the main arrays, the side
    block, or a candidates' gather (with one BLAS thread, the engine's
    ``search.blas_threads``: more threads split the rows where they like)."""
    n = len(rows)
    whole = n - n % GROUP
    if out is None:
        out = np.empty(n, dtype=np.float32)
    if whole:  # straight into ``out``: at a million rows no second array of scores
        np.matmul(rows[:whole], q, out=out[:whole])
    if whole < n:
        pad = np.zeros((GROUP, rows.shape[1]), dtype=rows.dtype)
        pad[:n - whole] = rows[whole:]
        out[whole:] = (pad @ q)[:n - whole]
    return out


def _misses(scores: np.ndarray, ids: np.ndarray, extra: np.ndarray, k: int) -> bool:
    """Whether every row marked ``extra`` comes after the ``k``-th best of the others (by
    score, then id): then a query's ``k`` best are the same whichever of them are among
    the candidates."""
    sure = np.flatnonzero(~extra)
    if len(sure) < k or bool(np.isnan(scores).any()):
        return False
    s, i = scores[sure], ids[sure]
    kth = np.lexsort((i, -s))[k - 1]
    es, eid = scores[extra], ids[extra]
    return bool(np.all((es < s[kth]) | ((es == s[kth]) & (eid > i[kth]))))


def _found(held: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(those of ``want`` that ``held``, sorted ids, holds; their positions in it)."""
    at = np.searchsorted(held, want)
    ok = at < len(held)
    ok[ok] = held[at[ok]] == want[ok]
    return want[ok], at[ok]


# Where a block of a query's candidates lies: positions in the main arrays, or (with a
# side block) ``ExactIndex._split``'s (which are side rows, main rows, side rows).
Where = np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Side:
    """Rows added far below the last ids, held apart (sorted by id, none of them in the
    main arrays): replaced whole, never written in place, so a reader's view stays."""

    ids: np.ndarray  # int64
    mat: np.ndarray  # the index's type
    proj: np.ndarray | None  # float32 with a prefilter
    fine: np.ndarray | None


@dataclass(frozen=True)
class Prefilter:
    """A prefilter as held (and sealed): its directions and the rows on them."""

    basis: np.ndarray  # float32, dim x m, orthonormal columns
    proj: np.ndarray  # float32, n x first: the rows on the first columns (scanned)
    fine: np.ndarray  # float32, n x (m - first): on the others (the candidates' refine)


class ExactIndex:
    def __init__(self, dim: int, *, compact: bool = False) -> None:
        self.dim = dim
        self._lock = SharedLock()  # the held arrays: reads shared; swaps, in-place writes alone
        self._write = threading.Lock()  # one write at a time (held across a rebuild)
        # Called by a rebuild with its new arrays built, before they are swapped in
        # (the read lock not held): a test holds a rebuild there.
        self.before_swap: Callable[[], None] | None = None
        self._dtype = np.dtype(np.float16 if compact else np.float32)
        self._mat = np.zeros((0, dim), dtype=self._dtype)
        self._ids = np.zeros(0, dtype=np.int64)
        self._n = 0
        self._side = self._no_side()  # rows added far below the last ids
        self._basis: np.ndarray | None = None  # dim x m: the prefilter's directions
        self._proj = np.zeros((0, 0), dtype=np.float32)  # rows on the first ``_first``
        self._fine = np.zeros((0, 0), dtype=np.float32)  # rows on the others
        self._first = 0
        self._candidates = 0
        self._refine = 0  # the best of the candidates by all m directions scored exactly
        self._spare: list[np.ndarray] = []  # coarse scores' buffers no query holds
        self._spare_lock = threading.Lock()

    def __len__(self) -> int:
        return self._n + len(self._side.ids)

    @property
    def compact(self) -> bool:
        return self._dtype == np.float16

    @property
    def side_rows(self) -> int:
        """Rows held in the side block (added far below the last ids, not merged yet)."""
        return len(self._side.ids)

    def nbytes(self) -> int:
        """Bytes of the rows held (and their projections), not counting spare room."""
        width = self._basis.shape[1] * 4 if self._basis is not None else 0
        return len(self) * (self.dim * self._dtype.itemsize + width + 8)

    def _no_side(self) -> Side:
        return Side(np.zeros(0, np.int64), np.zeros((0, self.dim), self._dtype), None, None)

    # -- writes ----------------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add or replace vectors (rows are normalised to unit length).

        Rows stay sorted by chunk id (those far below the last ids in the side block,
        read as merged), so the same set of vectors always scores and ranks the same,
        however it was built.
        """
        want = np.asarray([int(i) for i in ids], dtype=np.int64)
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(want), self.dim)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = (vecs / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)
        if not len(want):
            return
        # the last of repeated ids wins, as it would one add at a time
        uniq, last = np.unique(want[::-1], return_index=True)
        vecs = vecs[len(want) - 1 - last]
        with self._write:
            # as held (float16 in a compact index): projected as setting a prefilter up
            # projects the held rows, so a row's projection is the same however it came
            vecs = vecs.astype(self._dtype, copy=False)
            n = self._n
            at = np.searchsorted(self._ids[:n], uniq)
            held = at < n
            held[held] = self._ids[:n][at[held]] == uniq[held]
            if held.any():
                rows, hvecs = at[held], vecs[held]
                hproj = self._project(hvecs) if self._basis is not None else None
                with self._lock.write():
                    self._mat[rows] = hvecs
                    if hproj is not None:
                        self._proj[rows], self._fine[rows] = hproj
            fresh, fvecs = uniq[~held], vecs[~held]
            # held in the side block, or more than TAIL_ROWS held rows after: the side
            aside = np.isin(fresh, self._side.ids)
            if n > TAIL_ROWS:
                aside |= fresh < self._ids[n - TAIL_ROWS]
            if aside.any():
                self._to_side(fresh[aside], fvecs[aside])
                fresh, fvecs = fresh[~aside], fvecs[~aside]
            if not len(fresh):
                return
            fproj = self._project(fvecs) if self._basis is not None else None
            if n and fresh[0] < self._ids[n - 1]:  # not an append: only the last rows move
                self._merge_tail(int(np.searchsorted(self._ids[:n], fresh[0])),
                                 fresh, fvecs, fproj)
                return
            need = n + len(fresh)
            with self._lock.write():
                self._reserve(need)
                self._mat[n:need] = fvecs
                self._ids[n:need] = fresh
                if fproj is not None:
                    self._proj[n:need], self._fine[n:need] = fproj
                self._n = need

    def add_rebuilt(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add rows none of which is held by moving every row into id order in new
        arrays (copy-on-write), as an add far below the last ids did before the side
        block: kept for ``bench.far_add``'s before/after and as the
        tests' merged reference."""
        fresh = np.asarray([int(i) for i in ids], dtype=np.int64)
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(fresh), self.dim)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = (vecs / np.where(norms == 0, 1, norms)).astype(self._dtype)
        order = np.argsort(fresh, kind="stable")
        fresh, vecs = fresh[order], vecs[order]
        with self._write:  # the side block, if any, stays as it is
            if np.isin(fresh, self._ids[:self._n]).any() or \
                    np.isin(fresh, self._side.ids).any() or np.any(fresh[1:] == fresh[:-1]):
                raise ValueError("add_rebuilt takes new chunk ids only")
            proj = self._project(vecs) if self._basis is not None else None
            self._add_unordered(fresh, vecs, proj)

    def _to_side(self, fresh: np.ndarray, fvecs: np.ndarray) -> None:
        """Rows far below the last ids (or held in the side block) put in the side block:
        a new block of the old one's rows (less those replaced) and these, in id order,
        swapped in; merged into the main arrays when it passes ``SIDE_ROWS`` (call with
        the write lock held)."""
        old = self._side
        keep = ~np.isin(old.ids, fresh)
        ids = np.concatenate([old.ids[keep], fresh])
        order = np.argsort(ids, kind="stable")
        proj: list[np.ndarray | None] = [None, None]
        if self._basis is not None:
            new = self._project(fvecs)
            # an empty block has none (set_prefilter projects a block it finds)
            proj = [np.concatenate([held[keep] if held is not None else
                                    np.zeros((0, more.shape[1]), np.float32), more])[order]
                    for held, more in zip((old.proj, old.fine), new, strict=True)]
        side = Side(ids[order], np.concatenate([old.mat[keep], fvecs])[order], *proj)
        with self._lock.write():
            self._side = side
        if len(side.ids) > SIDE_ROWS:
            self._fold()

    def _fold(self) -> None:
        """The side block merged into the main arrays in place: the main rows above each
        side row moved up (a block at a time, from the top) and the side rows written
        into the gaps, under the read lock held alone; no copy of the main arrays (the
        arrays grow by ``realloc``, as an append's). Call with the write lock held."""
        side = self._side
        m = len(side.ids)
        if not m:
            return
        n = self._n
        at = np.searchsorted(self._ids[:n], side.ids)
        points, lo = np.unique(at, return_index=True)
        hi = np.append(lo[1:], m)
        parts = [("_ids", side.ids), ("_mat", side.mat)]
        if self._basis is not None:
            assert side.proj is not None and side.fine is not None
            parts += [("_proj", side.proj), ("_fine", side.fine)]
        with self._lock.write():
            self._reserve(n + m)
            for name, rows in parts:
                arr = getattr(self, name)
                top = n
                for a, first, past in zip(points[::-1].tolist(), lo[::-1].tolist(),
                                          hi[::-1].tolist(), strict=True):
                    for end in range(top, a, -SCAN_BLOCK):  # rows [a, top) up by past
                        start = max(a, end - SCAN_BLOCK)
                        arr[start + past:end + past] = arr[start:end]
                    arr[a + first:a + past] = rows[first:past]
                    top = a
            self._n = n + m
            self._side = self._no_side()

    def _with_new(self, fresh: np.ndarray, fvecs: np.ndarray,
                  proj: tuple[np.ndarray, np.ndarray] | None
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each held array's name -> (the array, its new rows): ids, rows (already of the
        index's type: ``add`` casts them) and, with a prefilter, their projections."""
        parts = {"_ids": (self._ids, fresh), "_mat": (self._mat, fvecs)}
        if proj is not None:
            parts.update(_proj=(self._proj, proj[0]), _fine=(self._fine, proj[1]))
        return parts

    def _merge_tail(self, at: int, fresh: np.ndarray, fvecs: np.ndarray,
                    proj: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Rows whose ids fall among the held rows from ``at`` on: those rows and the new
        ones merged in id order (built aside), then written over the tail in place, as
        an append is (call with the write lock held)."""
        n = self._n
        need = n + len(fresh)
        perm = np.argsort(np.concatenate([self._ids[at:n], fresh]), kind="stable")
        parts = self._with_new(fresh, fvecs, proj)
        merged = {name: np.concatenate([held[at:n], more])[perm]
                  for name, (held, more) in parts.items()}
        with self._lock.write():
            self._reserve(need)
            for name, rows in merged.items():
                getattr(self, name)[at:need] = rows
            self._n = need

    def _add_unordered(self, fresh: np.ndarray, fvecs: np.ndarray,
                       proj: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Rows whose ids fall among the held ones: every row moved into id order in
        new arrays, swapped in (call with the write lock held; ``add_rebuilt``)."""
        n = self._n
        ids = np.concatenate([self._ids[:n], fresh])
        perm = np.argsort(ids, kind="stable")
        need = len(ids)
        cap = len(self._mat) if need <= len(self._mat) else \
            max(need, len(self._mat) + len(self._mat) // 8, 1024)
        parts = self._with_new(fresh, fvecs, proj)
        new = {}
        for name, (held, more) in parts.items():
            out = np.zeros((cap, *held.shape[1:]), held.dtype)
            np.take(np.concatenate([held[:n], more]), perm, axis=0, out=out[:need])
            new[name] = out
        self._swap(new, need)

    def _swap(self, arrays: dict[str, np.ndarray], n: int) -> None:
        """Put rebuilt arrays in place of the held ones (the write lock held)."""
        if self.before_swap is not None:
            self.before_swap()
        with self._lock.write():
            for name, arr in arrays.items():
                setattr(self, name, arr)
            self._n = n

    def _reserve(self, need: int) -> None:
        """Room for ``need`` rows: grown in place (``realloc``: a big block moves by
        remapping its pages, not copying them), an eighth more at a time."""
        cap = max(need, len(self._mat) + len(self._mat) // 8, 1024)
        names = ("_mat", "_ids", "_proj", "_fine") if self._basis is not None else ("_mat", "_ids")
        for name in names:
            arr = getattr(self, name)
            if len(arr) >= need:
                continue
            if not arr.flags.owndata or not arr.flags.c_contiguous:
                arr = arr.copy()
            arr.resize((cap, *arr.shape[1:]), refcheck=False)
            setattr(self, name, arr)

    def _project(self, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows on the prefilter's first directions and on the others, a block at a
        time."""
        assert self._basis is not None
        out = np.empty((len(vecs), self._basis.shape[1]), dtype=np.float32)
        for at in range(0, len(vecs), SCAN_BLOCK):
            out[at:at + SCAN_BLOCK] = np.asarray(vecs[at:at + SCAN_BLOCK],
                                                 dtype=np.float32) @ self._basis
        return (np.ascontiguousarray(out[:, :self._first]),
                np.ascontiguousarray(out[:, self._first:]))

    def load(self, ids: np.ndarray, vectors: np.ndarray, *, unit: bool = False,
             prefilter: Prefilter | None = None) -> None:
        """Replace everything with these rows at once (a snapshot read, a rebuild): a
        whole-array path. ``unit``: the rows are already unit vectors (the index's own,
        sealed). Arrays already in id order and of the index's type are kept as they are
        (no copy); ``prefilter``, the one sealed with them, is used as it is (else a
        prefilter set before is computed again)."""
        ids_arr = np.asarray(ids, dtype=np.int64)
        mat = np.asarray(vectors)
        pre = prefilter if prefilter is not None and len(prefilter.proj) == len(ids_arr) \
            else None
        if len(ids_arr) > 1 and not bool(np.all(ids_arr[1:] > ids_arr[:-1])):
            order = np.argsort(ids_arr, kind="stable")
            ids_arr = ids_arr[order]
            if np.any(ids_arr[1:] == ids_arr[:-1]):
                raise ValueError("duplicate chunk ids")
            mat = mat[order]
            if pre is not None:
                pre = Prefilter(pre.basis, pre.proj[order], pre.fine[order])
        if not unit and len(mat):
            mat = np.asarray(mat, dtype=np.float32)
            norms = np.sqrt(np.einsum("ij,ij->i", mat, mat))[:, None]
            mat = mat / np.where(norms == 0, 1, norms)
        mat = np.ascontiguousarray(mat.reshape(len(ids_arr), self.dim), dtype=self._dtype)
        ids_arr = np.ascontiguousarray(ids_arr)
        with self._write:
            with self._lock.write():
                self._mat, self._ids, self._n = mat, ids_arr, len(ids_arr)
                self._side = self._no_side()
                old, self._basis = self._basis, None
                if pre is not None:
                    self._basis = np.ascontiguousarray(pre.basis, dtype=np.float32)
                    self._proj = np.ascontiguousarray(pre.proj, dtype=np.float32)
                    self._fine = np.ascontiguousarray(pre.fine, dtype=np.float32)
                    self._first = self._proj.shape[1]
                    return
                first = self._first
            if old is not None:
                self._set_prefilter(old, self._candidates, first, self._refine)

    def delete(self, ids: Sequence[int]) -> None:
        """Drop the rows of ``ids`` (those held): the rows kept are copied into new
        arrays, in id order, and swapped in; a search meanwhile reads the old ones (rows
        of the side block: a new, smaller block)."""
        want = np.unique(np.asarray([int(c) for c in ids], dtype=np.int64))
        with self._write:
            side = self._side
            gone = np.isin(side.ids, want)
            if gone.any():
                kept = ~gone
                smaller = Side(side.ids[kept], side.mat[kept],
                               side.proj[kept] if side.proj is not None else None,
                               side.fine[kept] if side.fine is not None else None)
                with self._lock.write():
                    self._side = smaller
            n = self._n
            _, at = _found(self._ids[:n], want)
            if not len(at):
                return
            keep = np.ones(n, dtype=bool)
            keep[at] = False
            left = int(keep.sum())
            names = ("_mat", "_ids", "_proj", "_fine") if self._basis is not None \
                else ("_mat", "_ids")
            new = {}
            for name in names:  # no temporary copy: the kept rows go straight in
                held = getattr(self, name)
                out = np.zeros(held.shape, held.dtype)
                np.compress(keep, held[:n], axis=0, out=out[:left])
                new[name] = out
            self._swap(new, left)

    # -- reads -----------------------------------------------------------------------
    def _split(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions in the merged id order (main rows and side block) -> (which are side
        rows, the main arrays' rows of the others, the side block's rows of those);
        call under the lock."""
        side, n = self._side, self._n
        m = len(side.ids)
        spos = np.searchsorted(self._ids[:n], side.ids) + np.arange(m)
        j = np.searchsorted(spos, pos)
        on = (j < m) & (spos[np.minimum(j, max(m - 1, 0))] == pos) if m else \
            np.zeros(len(pos), dtype=bool)
        return on, pos[~on] - j[~on], j[on]

    @staticmethod
    def _gather(main: np.ndarray, side: np.ndarray,
                where: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """The rows at merged positions split by ``_split``, in their order."""
        on, rows, srows = where
        out = np.empty((len(on), *main.shape[1:]), dtype=main.dtype)
        out[~on] = main[rows]
        out[on] = side[srows]
        return out

    def _merged(self, main: np.ndarray, side: np.ndarray) -> np.ndarray:
        """Every row of ``main`` (first ``_n``) and ``side`` in the merged id order,
        copied; call under the lock."""
        if not len(side):
            return main[:self._n].copy()
        return self._gather(main, side, self._split(np.arange(len(self))))

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The (unit) vectors of those of ``ids`` held here, copied (float32)."""
        want = np.asarray([int(c) for c in ids], dtype=np.int64)
        with self._lock.read():
            found, rows = _found(self._ids[:self._n], want)
            block = self._mat[rows].astype(np.float32)
            side = self._side
            if len(side.ids):
                more, at = _found(side.ids, want)
                found = np.concatenate([found, more])
                block = np.concatenate([block, side.mat[at].astype(np.float32)])
        return {int(c): block[j] for j, c in enumerate(found)}

    def ids(self) -> list[int]:
        with self._lock.read():
            return [int(i) for i in self._merged(self._ids, self._side.ids)]

    def ids_and_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id (ascending) and its unit vector, copied (float32)."""
        with self._lock.read():
            return (self._merged(self._ids, self._side.ids),
                    self._merged(self._mat, self._side.mat).astype(np.float32))

    def held(self) -> tuple[np.ndarray, np.ndarray, Prefilter | None]:
        """The ids, rows and prefilter as held, not copied (views), the side block merged
        in first: only for a caller that no write runs beside (the snapshot's save)."""
        with self._write:
            self._fold()
        with self._lock.read():
            n = self._n
            if self._basis is None:
                return self._ids[:n], self._mat[:n], None
            return (self._ids[:n], self._mat[:n],
                    Prefilter(self._basis, self._proj[:n], self._fine[:n]))

    def set_prefilter(self, basis: np.ndarray | None, candidates: int, *, first: int = 0,
                      refine: int = 0) -> None:
        """Scan the rows projected on the first ``first`` columns of ``basis`` (dim x m,
        orthonormal columns; 0: all of them) first; score the best ``candidates`` of them
        on all m columns and only the best ``refine`` of those (0: every candidate)
        exactly. None: every row exactly."""
        if basis is None:
            with self._write, self._lock.write():
                self._basis, self._candidates = None, 0
                self._proj = self._fine = np.zeros((0, 0), np.float32)
                side = self._side
                self._side = Side(side.ids, side.mat, None, None)
            return
        with self._write:
            self._set_prefilter(basis, candidates, first, refine)

    def _set_prefilter(self, basis: np.ndarray, candidates: int, first: int,
                       refine: int) -> None:
        """The rows' projections computed into new arrays and swapped in (call with the
        write lock held)."""
        b = np.ascontiguousarray(basis, dtype=np.float32)
        m = b.shape[1]
        first = m if not first or first >= m else first
        n = self._n
        proj = np.zeros((len(self._mat), first), dtype=np.float32)
        fine = np.zeros((len(self._mat), m - first), dtype=np.float32)
        for at in range(0, n, SCAN_BLOCK):
            end = min(n, at + SCAN_BLOCK)
            both = self._mat[at:end].astype(np.float32) @ b
            proj[at:end], fine[at:end] = both[:, :first], both[:, first:]
        side = self._side
        both = side.mat.astype(np.float32) @ b
        side = Side(side.ids, side.mat, np.ascontiguousarray(both[:, :first]),
                    np.ascontiguousarray(both[:, first:]))
        if self.before_swap is not None:
            self.before_swap()
        with self._lock.write():
            self._basis, self._proj, self._fine, self._first = b, proj, fine, first
            self._candidates, self._refine = int(candidates), int(refine)
            self._side = side

    def set_candidates(self, candidates: int, refine: int = 0) -> None:
        if (self._candidates, self._refine) == (int(candidates), int(refine)):
            return  # as set (every query asks): no exclusive hold that waits for a scan
        with self._lock.write():
            self._candidates, self._refine = int(candidates), int(refine)

    def to_compact(self) -> None:
        """Keep the rows as float16 from now on (half the memory)."""
        with self._write:
            if self.compact:
                return
            mat = self._mat[:self._n].astype(np.float16)
            side = self._side
            side = Side(side.ids, side.mat.astype(np.float16), side.proj, side.fine)
            if self.before_swap is not None:
                self.before_swap()
            with self._lock.write():
                self._mat, self._dtype, self._side = mat, np.dtype(np.float16), side

    @property
    def prefiltered(self) -> bool:
        return self._basis is not None

    def sample(self, most: int) -> np.ndarray:
        """Up to ``most`` rows, evenly spread over the id order (the same set gives the
        same sample), copied (float32)."""
        with self._lock.read():
            total = len(self)
            step = max(1, total // max(1, most))
            if not len(self._side.ids):
                return self._mat[:total:step][:most].astype(np.float32)
            where = self._split(np.arange(0, total, step)[:most])
            return self._gather(self._mat, self._side.mat, where).astype(np.float32)

    def _scan(self, n: int, q: np.ndarray, mat: np.ndarray | None = None) -> np.ndarray:
        """The score of each of the first ``n`` rows (of ``mat``: the side block's; under
        the lock)."""
        mat = self._mat if mat is None else mat
        if not self.compact:
            return score_rows(mat[:n], q)
        out = np.empty(n, dtype=np.float32)
        for at in range(0, n, SCAN_BLOCK):
            end = min(n, at + SCAN_BLOCK)
            out[at:end] = score_rows(mat[at:end].astype(np.float32), q)
        return out

    def _candidates_of(self, qb: np.ndarray, total: int, coarse: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray | None]:
        """The prefilter's candidates for a query on its directions (``qb``; ``coarse``:
        its scores on the first ones, ``_coarse``, when made already): merged
        positions, ascending (under the lock), and None or which of them are tied at
        the last cut (of those ``np.argpartition`` keeps some, by its pivots: the caller
        shows that they miss its answer, ``_misses``, or takes
        ``_candidates_by_partition``). The best ``_candidates`` coarse scores (picked by
        ``select.cut``: a sampled threshold, not a partition of every score), then the
        best ``_refine`` of them on all the directions. Rows tied across the coarse cut
        are left out where all of them fall below the refine's cut (then whichever the
        partition kept, the refine keeps none); else the partition picks, as before."""
        first, want, refine = self._first, self._candidates, self._refine
        if coarse is None:
            coarse = self._coarse(qb[:first])
        got = cut(coarse, want)
        if got is None:
            return self._candidates_by_partition(qb, total, coarse), None
        pos, tied = got
        if not (refine and first < len(qb) and refine < want):
            return pos, (tied if len(pos) > want else None)
        pool = pos if len(pos) == want else pos[~tied]
        inner = None
        if refine < len(pool):
            finer = coarse[pool] + self._fine_scores(pool, qb[first:])
            inner = cut(finer, refine)
        if inner is None:
            return self._candidates_by_partition(qb, total, coarse), None
        keep, held = inner
        if len(pool) < len(pos):  # the rows tied at the coarse cut: all below the refine's
            out = pos[tied]
            theirs = coarse[out] + self._fine_scores(out, qb[first:])
            if not bool(np.all(theirs < finer[keep[held][0]])):
                return self._candidates_by_partition(qb, total, coarse), None
        return pool[keep], (held if len(keep) > refine else None)

    def _candidates_by_partition(self, qb: np.ndarray, total: int,
                                 coarse: np.ndarray | None = None) -> np.ndarray:
        """The candidates as ``np.argpartition`` picks them from every coarse score (and
        the refine's), sorted: the set ``_candidates_of`` finds, also where a tie
        crosses a cut (then its pivots decide which tied rows stay)."""
        first = self._first
        if coarse is None:
            coarse = self._coarse(qb[:first])
        cand = np.argpartition(coarse, total - self._candidates)[total - self._candidates:]
        if self._refine and first < len(qb) and self._refine < len(cand):
            finer = coarse[cand] + self._fine_scores(cand, qb[first:])
            cand = cand[np.argpartition(finer, len(cand) - self._refine)
                        [len(cand) - self._refine:]]
        return np.sort(cand)

    def _coarse(self, qfirst: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Every row's score on the prefilter's first directions, in the merged id order
        (under the lock)."""
        side, n = self._side, self._n
        coarse = score_rows(self._proj[:n], qfirst, out)
        if len(side.ids):
            assert side.proj is not None
            coarse = np.insert(coarse, np.searchsorted(self._ids[:n], side.ids),
                               score_rows(side.proj, qfirst))
        return coarse

    @contextmanager
    def _scores_buffer(self, n: int) -> Iterator[np.ndarray]:
        """A float32 array of ``n`` for a query's coarse scores, held while the block
        runs and then kept for the next query: the scores of a million rows (4 MB) are
        made once, not at every query; up to ``SPARE_BUFFERS`` are kept."""
        with self._spare_lock:
            buf = self._spare.pop() if self._spare else None
        if buf is None or len(buf) < n:
            buf = np.empty(n + n // 8, dtype=np.float32)  # room to grow
        try:
            yield buf[:n]
        finally:
            with self._spare_lock:
                if len(self._spare) < SPARE_BUFFERS:
                    self._spare.append(buf)

    def _blocks(self, cand: np.ndarray, row_bytes: int) -> Iterator[tuple[int, Where]]:
        """``cand`` (merged positions) a block of ``block_rows(row_bytes)`` at a time: (the
        block's start, where its rows lie: ``_rows``), the side block's places found once
        for all of them (``_split``: 2.6 ms with 65,536 side rows); under the lock."""
        step = block_rows(row_bytes)
        if not len(self._side.ids):
            for at in range(0, len(cand), step):
                yield at, cand[at:at + step]
            return
        on, rows, srows = self._split(cand)
        mi = si = 0
        for at in range(0, len(cand), step):
            o = on[at:at + step]
            k = int(np.count_nonzero(o))
            yield at, (o, rows[mi:mi + len(o) - k], srows[si:si + k])
            mi, si = mi + len(o) - k, si + k

    def _rows(self, main: np.ndarray, side: np.ndarray | None, where: Where) -> np.ndarray:
        """A block's rows (``_blocks``) from a main array and the side block's."""
        if isinstance(where, np.ndarray):
            return main[where]
        assert side is not None
        return self._gather(main, side, where)

    def _fine_scores(self, cand: np.ndarray, qfine: np.ndarray) -> np.ndarray:
        """The rows at merged positions ``cand`` scored on the other directions, a block of
        rows at a time (under the lock)."""
        out = np.empty(len(cand), dtype=np.float32)
        fine = self._side.fine
        for at, where in self._blocks(cand, len(qfine) * 4):
            rows = self._rows(self._fine, fine, where)
            score_rows(rows, qfine, out[at:at + len(rows)])
        return out

    def _scored(self, cand: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, exact scores) of the rows at merged positions ``cand``, a block of rows at
        a time (under the lock)."""
        side = self._side
        ids = (self._gather(self._ids, side.ids, self._split(cand)) if len(side.ids)
               else self._ids[cand])
        scores = np.empty(len(cand), dtype=np.float32)
        # float16 rows: the largest temporary is their table indices (``as_float32``)
        for at, where in self._blocks(cand, self.dim * 8):
            rows = self._rows(self._mat, side.mat, where)
            score_rows(as_float32(rows), q, scores[at:at + len(rows)])
        return ids, scores

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (chunk id, cosine), best first, ties by chunk id (with a
        prefilter, among the candidates it keeps). The side block is read as merged
        into the main rows: the candidates are picked from the merged id order."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm:
            q = q / norm
        with self._lock.read():
            n, side = self._n, self._side
            total = n + len(side.ids)
            if total == 0 or k <= 0:
                return []
            if self._basis is not None and total > max(self._candidates, k):
                qb = q @ self._basis
                with self._scores_buffer(n) as buf:
                    # every row's coarse score, made once: a tie the argpartition settles
                    # partitions these, not a second scan of every row (11 ms at 1M)
                    coarse = self._coarse(qb[:self._first], buf)
                    cand, extra = self._candidates_of(qb, total, coarse)
                    ids, scores = self._scored(cand, q)
                    if extra is not None and not _misses(scores, ids, extra, k):
                        cand = self._candidates_by_partition(qb, total, coarse)
                        ids, scores = self._scored(cand, q)
                total = len(cand)
            else:
                scores = self._scan(n, q)
                ids = self._ids[:n].copy()
                if len(side.ids):
                    scores = np.concatenate([scores, self._scan(len(side.ids), q, side.mat)])
                    ids = np.concatenate([ids, side.ids])
        n = total
        if k < n:
            # everything tied with the k-th score stays in, so the cut is order-free
            kth = np.partition(scores, n - k)[n - k]
            keep = np.nonzero(scores >= kth)[0]
        else:
            keep = np.arange(n)
        order = keep[np.lexsort((ids[keep], -scores[keep]))][:k]
        return [(int(ids[i]), float(scores[i])) for i in order]
