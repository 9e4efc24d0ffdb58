"""The default vector index: in memory only, no vector in the clear on disk.

A rotation cannot hide vectors kept on disk: it keeps every inner product, so
whoever knows some of the user's files pairs them with the stored vectors and
solves for it (bench/vector_attack.py, docs/threat-model.md). Here the vectors
live in memory (model space), filled at open from the encrypted snapshot
(``snapshot.SnapshotFile``), else from the vault's embedding cache, and saved
encrypted again at close and after a delete.

Up to ``store.exact_search_max`` vectors every query scans them all; above it a
prefilter on the stored vectors' top principal directions
picks the candidates scored exactly (``ExactIndex.set_prefilter``), as many as
``candidates_for`` says for the index's size; above ``store.float16_above`` the rows
are kept as float16 (a million vectors of 384 dimensions: 768 MB instead of 1.5 GB).
Both are set up by ``warm`` (the
engine's warm-up at open) or, failing that, in a thread at the first query of a big
index; the sealed snapshot keeps the prefilter, so a reopened store has it at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.store.config import StoreConfig
from engine.store.vectors.exact_index import ExactIndex, Prefilter
from engine.store.vectors.index import DeadLookup, VectorStore, warming_thread
from engine.store.vectors.snapshot import Snapshot, SnapshotFile, fingerprint

log = logging.getLogger("ctx.vectors")

BASIS_SAMPLE = 20_000  # rows the prefilter's directions are computed from (0.3 s here)

Fingerprints = Callable[[], tuple[list[int], list[str]]]  # ready chunk ids, content hashes


def principal_basis(sample: np.ndarray, dims: int) -> np.ndarray:
    """The ``dims`` directions that hold most of ``sample``'s energy (dim x dims): the top
    eigenvectors of its second moment (uncentred: the vectors' common direction counts
    in every dot product)."""
    moment = sample.T.astype(np.float64) @ sample.astype(np.float64)
    _, vecs = np.linalg.eigh(moment)
    return np.ascontiguousarray(vecs[:, ::-1][:, :dims], dtype=np.float32)


class MemoryVectors(VectorStore):
    backend = "memory"

    def __init__(self, dim: int, dead: DeadLookup, cfg: StoreConfig | None = None, *,
                 snapshot: SnapshotFile | None = None,
                 fingerprints: Fingerprints | None = None,
                 version: Callable[[], int] | None = None) -> None:
        cfg = cfg or StoreConfig()
        self._index = ExactIndex(dim)
        self._dead = dead
        self._exact_max = cfg.exact_search_max
        self._dims = cfg.prefilter_dims
        self._candidates = cfg.prefilter_candidates
        self._per_million = cfg.prefilter_candidates_per_million
        self._fine_dims = cfg.prefilter_fine_dims
        self._refine = cfg.prefilter_refine
        self._float16_above = cfg.float16_above
        self._snap = snapshot
        self._fingerprints = fingerprints
        self._version = version
        self._dirty = False  # changed since loaded or saved
        self._lock = threading.Lock()  # one prefilter set-up at a time
        self._later: threading.Thread | None = None

    # -- writes ----------------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: np.ndarray,
            metas: Sequence[dict[str, Any]] | None = None) -> None:
        if len(ids):
            index = self._index
            index.add([int(i) for i in ids], np.asarray(vectors, dtype=np.float32))
            if len(index) > self._float16_above and not index.compact:
                index.to_compact()  # grown past the bound while open
            self._dirty = True

    def delete_source(self, source_id: int) -> None:
        self.delete(self._dead(int(source_id)))

    def delete_sources(self, source_ids: Sequence[int]) -> None:
        """One rebuild of the index for all of them (each rebuild copies every row kept;
        searches meanwhile read the rows as they were)."""
        self.delete([c for sid in source_ids for c in self._dead(int(sid))])

    def delete(self, ids: Sequence[int]) -> None:
        if len(ids):
            self._index.delete(ids)
            self._dirty = True

    def reset(self) -> None:
        self._index = ExactIndex(self._index.dim)
        self._dirty = True

    def load(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray, *,
             unit: bool = False, prefilter: Prefilter | None = None) -> None:
        """Replace the index with these vectors (a snapshot's, ``unit`` as the index
        sealed them, with the prefilter sealed beside them; or read from the vault)."""
        n = len(ids)
        big = n > self._exact_max
        index = ExactIndex(self._index.dim, compact=n > self._float16_above)
        index.load(np.asarray(ids, dtype=np.int64), vectors, unit=unit,
                   prefilter=prefilter if big else None)
        if index.prefiltered:
            index.set_candidates(self.candidates_for(n), self._refine)
        self._index = index

    def candidates_for(self, n: int) -> int:
        """How many of the prefilter's best rows are scored exactly in an index of ``n``:
        the more rows, the more crowd the last of the 50 best (store config)."""
        return max(self._candidates, -(-n * self._per_million // 1_000_000))

    # -- reads -----------------------------------------------------------------------
    def query(self, vector: np.ndarray, k: int, *, found: dict[int, np.ndarray] | None = None
              ) -> list[tuple[int, float]]:
        index = self._index
        if len(index) > self._exact_max and not index.prefiltered:
            self._prefilter_later()
        if index.prefiltered:
            index.set_candidates(self.candidates_for(len(index)), self._refine)
        hits = index.query(vector, k)
        if found is not None:
            found.update(index.vectors([c for c, _ in hits]))
        return hits

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        return self._index.vectors(ids)

    def count(self) -> int:
        return len(self._index)

    def index_copy(self) -> tuple[np.ndarray, np.ndarray]:
        """Every id (ascending) and its unit vector, copied at once (for a backup)."""
        return self._index.ids_and_vectors()

    def memory(self) -> dict[str, Any]:
        index = self._index
        return {"kind": "prefilter" if index.prefiltered else "exact", "state": "ready",
                "vectors": len(index), "bytes": index.nbytes()}

    def warm(self, chunk_ids: Callable[[], Sequence[int]] | None = None) -> None:
        """Above ``exact_search_max`` vectors: float16 rows and the prefilter (0.5-2 s at
        100k)."""
        index = self._index
        if len(index) <= self._exact_max or index.prefiltered or not self._dims:
            return
        with self._lock:
            if index.prefiltered or index is not self._index:
                return
            if len(index) > self._float16_above:
                index.to_compact()
            index.set_prefilter(principal_basis(index.sample(BASIS_SAMPLE),
                                                min(index.dim, self._dims + self._fine_dims)),
                                self.candidates_for(len(index)), first=self._dims,
                                refine=self._refine)
            self._dirty = True  # sealed with the prefilter at close: the next open has it

    def _prefilter_later(self) -> None:
        with self._lock:
            if self._later is not None and self._later.is_alive():
                return
            # queries scan every vector meanwhile
            self._later = warming_thread(self.warm, "ctx-vector-prefilter",
                                         "vector prefilter not set up")
            self._later.start()

    # -- the snapshot ------------------------------------------------------------------
    def read_snapshot(self) -> Snapshot | None:
        return self._snap.load(self._index.dim) if self._snap is not None else None

    def save_snapshot(self) -> bool:
        """Seal what the index holds for the vault's ready chunks (call where no write
        runs beside it: at open, in the single writer, at close). False when this
        index keeps no snapshot."""
        if self._snap is None or self._fingerprints is None or self._version is None:
            return False
        version = self._version()
        ids, hashes = self._fingerprints()
        held_ids, held, pre = self._index.held()  # views: no write runs beside
        want = np.asarray(ids, dtype=np.int64)
        if np.array_equal(want, held_ids):  # as held: nothing copied
            snap = Snapshot(version, want, fingerprint(hashes), held, pre)
        else:
            keep = np.isin(want, held_ids)
            rows = np.searchsorted(held_ids, want[keep])
            snap = Snapshot(version, want[keep], fingerprint(
                [h for h, k in zip(hashes, keep, strict=True) if k]), held[rows],
                Prefilter(pre.basis, pre.proj[rows], pre.fine[rows]) if pre else None)
        self._snap.save(snap)
        self._dirty = False
        return True

    def rekey(self, key: bytes) -> bool:
        """The sealed file sealed again under ``key``, and later saves sealed under it."""
        if self._snap is not None:
            if not self._snap.rekey(key):
                self._dirty = True  # none was left: the next save writes it
            self._snap = SnapshotFile(self._snap.path, key)
        return True

    def forget_snapshot(self) -> None:
        """Remove the sealed file now (after a delete, until it is saved again)."""
        if self._snap is not None:
            self._snap.remove()
            self._dirty = True

    def close(self) -> None:
        """Save the snapshot if the index changed since it was read or saved."""
        if not self._dirty or self._snap is None:
            return
        try:
            self.save_snapshot()
        except Exception as exc:  # noqa: BLE001 - the next open rebuilds from the vault
            log.warning("vector snapshot not saved (%s): the next open rebuilds the index",
                        getattr(exc, "name", type(exc).__name__))
