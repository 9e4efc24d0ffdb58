"""The vector side: what the engine needs from a vector index, and the Chroma one.

Chroma (embedded, or a server over HTTP) holds, per chunk, a keyed id (see
``vector_ids``) and the embedding under the secret rotation; no text and no
metadata at all (kinds, times and source names stay in the vault; filters are
applied there). Each batch is added in a random order, so Chroma's internal
insertion sequence follows ingestion only batch by batch.

Below ``store.exact_search_max`` vectors, queries are answered by an exact
search over the vectors held in memory, in model space (HNSW results differ
between processes for such sizes: chroma-core/chroma#2675). Above it, HNSW
answers, ties broken by chunk id: its hits are re-scored exactly from the
vectors it returns or, once the vector cache holds every vector
(``vector_cache``), scored by its own cosine distances and their vectors taken
from the cache.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine import paths as P
from engine.crypto.rotation import Rotation
from engine.errors import ConfigError, NoSpace, VectorsDamaged, VectorStoreUnavailable
from engine.store.config import StoreConfig, chroma_endpoint
from engine.store.vectors.cache import VectorCache
from engine.store.vectors.exact_index import ExactIndex
from engine.store.vectors.ids import KeyedIds

log = logging.getLogger("ctx.vectors")


def warming_thread(warm: Callable[[], object], name: str, failed: str) -> threading.Thread:
    """A daemon thread (named ``name``) that runs ``warm``: a failure is logged as
    ``failed`` with the error's name, never raised (queries go on without it)."""

    def run() -> None:
        try:
            warm()
        except Exception as exc:  # noqa: BLE001 - a cache or prefilter is only a speed-up
            log.warning("%s (%s)", failed, getattr(exc, "name", type(exc).__name__))

    return threading.Thread(target=run, daemon=True, name=name)

DeadLookup = Callable[[int], list[int]]  # source id -> ids of its deleted chunks
_FATAL = (KeyboardInterrupt, SystemExit, GeneratorExit)


class VectorStore:
    """The vector index the engine writes and queries (chunk ids, model-space vectors)."""

    backend = "none"
    legacy: str | None = None  # an older collection to drop once rebuilt

    def add(self, ids: Sequence[int], vectors: np.ndarray,
            metas: Sequence[dict[str, Any]] | None = None) -> None:
        raise NotImplementedError

    def delete_source(self, source_id: int) -> None:
        raise NotImplementedError

    def delete_sources(self, source_ids: Sequence[int]) -> None:
        """The vectors of these deleted sources, in one call (an index may drop them in
        one pass)."""
        for sid in source_ids:
            self.delete_source(sid)

    def delete(self, ids: Sequence[int]) -> None:
        raise NotImplementedError

    def query(self, vector: np.ndarray, k: int, *, found: dict[int, np.ndarray] | None = None
              ) -> list[tuple[int, float]]:
        """Nearest chunks: (chunk id, cosine), best first. ``found``, when given, also
        gets the hits' vectors (model space) where the index read them anyway."""
        raise NotImplementedError

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Model-space vectors of those of ``ids`` the index holds ({} if it cannot say)."""
        return {}

    def count(self) -> int:
        raise NotImplementedError

    def warm(self, chunk_ids: Callable[[], Sequence[int]] | None = None) -> None:
        """Load what the first queries would otherwise wait for (the engine's warm-up
        thread calls it after open); a no-op where nothing needs loading. ``chunk_ids``
        lists the chunks the vault holds, where reading by id is cheaper than paging."""

    def memory(self) -> dict[str, Any]:
        """What of the index is held in memory for queries (for ``status``): ``kind``
        ("exact", "cache" or "none"), ``state``, ``vectors`` and ``bytes``."""
        return {"kind": "none", "state": "none", "vectors": 0, "bytes": 0}

    def healthy(self) -> bool:
        try:
            self.count()
            return True
        except Exception:  # noqa: BLE001 - health probe: any failure is "down"
            return False

    def reset(self) -> None:
        """Remove every vector (before a rebuild)."""
        raise NotImplementedError

    def save_snapshot(self) -> bool:
        """Seal the index's vectors to disk where this index keeps a snapshot (the memory
        backend); False where it keeps none. Called where no write runs beside it."""
        return False

    def rekey(self, key: bytes) -> bool:
        """Seal what this index keeps on disk under ``key`` from now on (the data key was
        rotated while it ran); False where it cannot (Chroma's ids and vector rotation
        come from the key: it is rebuilt at the next open instead)."""
        return False

    def close(self) -> None:
        """Release the index (and, for Chroma, its process-wide cached client)."""


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _evict_cached_system(path: Path) -> None:
    """Drop Chroma's cached client for ``path`` (chroma-core/chroma#6499): a folder
    deleted and recreated, or restored from a backup, must be opened afresh."""
    from chromadb.api.shared_system_client import SharedSystemClient as S

    key = str(path)
    system = S._identifier_to_system.pop(key, None)
    S._identifier_to_refcount.pop(key, None)
    if system is not None:
        try:
            system.stop()
        except BaseException as exc:
            if isinstance(exc, _FATAL):
                raise


def peek_collections(path: Path) -> list[str] | None:
    """The collection names in an embedded store, read without opening Chroma (which
    writes on open, and panics on a damaged file); None when there is no store yet.
    VectorsDamaged when its database cannot be read."""
    db = path / "chroma.sqlite3"
    if not db.exists():
        return None
    import sqlite3

    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            names = [r[0] for r in con.execute("SELECT name FROM collections")]
            # a damaged page found only after Chroma opened would leave the file rewritten
            # (it writes on open) and a Rust panic on stderr: every page is read first
            # (0.1 s at 100k vectors)
            if con.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            con.text_factory = bytes  # Chroma panics on its own tables' text not UTF-8
            for table in _CHROMA_SMALL_TABLES:
                for row in con.execute(f"SELECT * FROM {table}"):
                    for value in row:
                        if isinstance(value, bytes):
                            value.decode("utf-8")
            return names
        finally:
            con.close()
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise VectorsDamaged(
            f"vectors/chroma.sqlite3 cannot be read ({str(exc)[:60]}): run `ctx repair` to "
            "set it aside and rebuild the vectors from the vault") from None


# Chroma's own bookkeeping, read whole at open (a few rows each)
_CHROMA_SMALL_TABLES = ("migrations", "tenants", "databases", "collections", "segments",
                        "collection_metadata", "segment_metadata")


def collection_name(key_id: str) -> str:
    return "ctx2-" + key_id


class ChromaVectors(VectorStore):
    def __init__(self, cfg: StoreConfig, path: Path, rotation: Rotation, ids: KeyedIds,
                 key_id: str, dead: DeadLookup,
                 chunk_ids: Callable[[], Sequence[int]] | None = None) -> None:
        import chromadb

        self.rotation = rotation
        self.backend = cfg.vector_backend
        self._keyed = ids
        self._dead = dead
        self._path = path
        self._exact_max = cfg.exact_search_max
        self._exact: ExactIndex | None = None
        self._exact_state = "unknown"  # unknown | exact | hnsw
        self._exact_lock = threading.Lock()
        # The collection's size as last counted, dropped by every write: Chroma counts
        # by scanning (about 40 ms at 100k vectors), and a query needs it only to bound
        # n_results.
        self._size: int | None = None
        # Above exact_search_max, every vector in memory for the rerank (vector_cache)
        self._cache = (VectorCache(rotation.dim, cfg.vector_cache_mb * 2**20)
                       if cfg.vector_cache_mb else None)
        self._page_lock = threading.Lock()  # close waits for a page being read (warm)
        self._chunk_ids = chunk_ids  # the vault's chunk ids: the cache reads by id
        self._auto_warm: threading.Thread | None = None
        self._warm_lock = threading.Lock()  # one warm at a time; close waits for it
        self._closing = False
        self._hnsw_cfg = {"hnsw": {"space": "cosine", "ef_search": cfg.hnsw_ef_search}}
        self._client: Any = None
        name = collection_name(key_id)
        try:
            if cfg.vector_backend == "http":
                at = chroma_endpoint(cfg.chroma_url)
                self._client = chromadb.HttpClient(host=at.host, port=at.port, ssl=at.ssl,
                                                   settings=_settings())
                self._col = self._client.get_or_create_collection(
                    name, embedding_function=None, configuration=self._hnsw_cfg)
                return
            if path.exists() and not path.is_dir():
                raise VectorsDamaged("vectors/ is not a folder: run `ctx repair` to set it "
                                     "aside and rebuild the vectors from the vault")
            found = peek_collections(path)
            if found is not None:
                self._check_owner(found, name, "ctx-" + key_id)
            _evict_cached_system(path)
            self._client = chromadb.PersistentClient(path=str(path), settings=_settings())
            self._col = self._open_embedded(name, "ctx-" + key_id)
            P.harden(path)
        except (ConfigError, VectorsDamaged):
            self.close()
            raise
        except BaseException as exc:
            self.close()
            if isinstance(exc, _FATAL):
                raise
            if cfg.vector_backend == "http":
                raise VectorStoreUnavailable(
                    f"vector store (http) not reachable: {type(exc).__name__}") from None
            if P.disk_full(path.parent):
                raise NoSpace("the disk holding the data dir is full: the vector store cannot "
                              "open; free some space") from None
            raise VectorsDamaged(
                f"vectors/ cannot be read ({type(exc).__name__}): run `ctx repair` to "
                "rebuild it from the vault (the damaged folder is kept aside)") from None

    @staticmethod
    def _check_owner(names: list[str], name: str, legacy: str) -> None:
        if name not in names and any(n != legacy for n in names):
            raise VectorsDamaged(
                "vectors/ belongs to another store (its collections were made with another "
                "key): run `ctx repair` to set it aside and rebuild the vectors from the vault")

    def _open_embedded(self, name: str, legacy: str) -> Any:
        names = [getattr(c, "name", c) for c in self._client.list_collections()]
        if name in names:
            return self._client.get_collection(name, embedding_function=None)
        self._check_owner(names, name, legacy)
        if legacy in names:
            self.legacy = legacy
        return self._client.create_collection(name, embedding_function=None,
                                              configuration=self._hnsw_cfg)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:  # Chroma's Rust side can panic (BaseException)
            if isinstance(exc, _FATAL):
                raise
            if self.backend == "embedded" and what in ("add", "delete") \
                    and P.disk_full(self._path.parent):
                raise NoSpace("the disk holding the data dir is full: nothing was written; "
                              "free some space and retry (the store can still be read)") \
                    from None
            raise VectorStoreUnavailable(f"vector store {what} failed: {type(exc).__name__}") \
                from None

    # -- writes ------------------------------------------------------------------
    def add(self, ids: Sequence[int], vectors: np.ndarray,
            metas: Sequence[dict[str, Any]] | None = None) -> None:
        """Add chunk vectors; ``metas`` is accepted for callers and not stored."""
        if not len(ids):
            return
        order = list(range(len(ids)))
        secrets.SystemRandom().shuffle(order)
        chunk_ids = [int(ids[i]) for i in order]
        model = np.asarray(vectors)[order]
        rotated = self.rotation.apply(model)
        keyed = self._keyed.encode(chunk_ids)
        self._size = None
        if self._cache is not None:  # no old vector of theirs served if a batch fails
            self._cache.delete(chunk_ids)
        for i in range(0, len(keyed), 2000):
            self._call("add", self._col.upsert, ids=keyed[i:i + 2000],
                       embeddings=rotated[i:i + 2000])
        self._size = None
        if self._cache is not None:
            self._cache.add(chunk_ids, model)
        with self._exact_lock:
            if self._exact is not None:
                self._exact.add(chunk_ids, model)
                if len(self._exact) > self._exact_max:
                    exact, self._exact, self._exact_state = self._exact, None, "hnsw"
                    if self._cache is not None:  # the cache takes over, from memory
                        held = exact.ids()
                        self._cache.load(len(held), [(held, np.stack(
                            list(exact.vectors(held).values())))])
        if self.backend == "embedded":
            P.harden(self._path)

    def delete_source(self, source_id: int) -> None:
        self.delete(self._dead(int(source_id)))

    def delete(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        keyed = self._keyed.encode(ids)
        self._size = None
        for i in range(0, len(keyed), 2000):
            self._call("delete", self._col.delete, ids=keyed[i:i + 2000])
        self._size = None
        if self._cache is not None:
            self._cache.delete(ids)
        with self._exact_lock:
            if self._exact is not None:
                self._exact.delete(ids)

    def reset(self) -> None:
        with self._exact_lock:
            self._exact, self._exact_state = None, "unknown"
        if self._cache is not None:
            self._cache.reset()
        while True:
            self._size = None
            got = self._call("get", self._col.get, limit=5000, include=[])
            if not got["ids"]:
                return
            self._call("delete", self._col.delete, ids=got["ids"])

    def drop_legacy(self) -> None:
        if self.legacy and self._client is not None:
            self._call("delete", self._client.delete_collection, self.legacy)
            self.legacy = None

    # -- reads -------------------------------------------------------------------
    def warm(self, chunk_ids: Callable[[], Sequence[int]] | None = None) -> None:
        """Below ``exact_search_max``: the exact index; above it, the vector cache, every
        vector read once: by the vault's chunk ids, 500 a call (about 5 s of a 7 s
        warm-up at 100k on the shared 2-core machine, no call holding the GIL over 30 ms;
        paging by offset took 11 s, with calls of half a second). An engine that was not warmed up starts this
        in a thread at its first query of a big store (``_warm_later``). A second call
        waits for the first; a call after ``close`` does nothing."""
        with self._warm_lock:
            if self._closing or self._exact_index() is not None or self._cache is None:
                return
            n = self.count()
            chunk_ids = chunk_ids or self._chunk_ids
            pages = self._pages_by_id(chunk_ids) if chunk_ids is not None else self._pages(n)
            self._cache.load(n, ((ids, self.rotation.invert(rotated))
                                 for ids, rotated in pages))

    def _pages_by_id(self, chunk_ids: Callable[[], Sequence[int]], size: int = 500
                     ) -> Iterator[tuple[list[int], np.ndarray]]:
        """The stored vectors of the chunks ``chunk_ids()`` lists (those the index holds,
        as stored), a page at a time, letting other threads run between pages. The ids
        are listed at the first page, once the cache is loading: a chunk added after
        that is logged by the cache, one added before is in the list."""
        ids = [] if self._closing else chunk_ids()
        for i in range(0, len(ids), size):
            found, vectors, _ = self._page(ids=self._keyed.encode(ids[i:i + size]))
            if found:
                yield found, vectors
            time.sleep(0)  # a foreground query waiting for the GIL gets it now

    def _page(self, **where: Any) -> tuple[list[int], np.ndarray, int]:
        """One ``get`` of stored vectors: (chunk ids, their vectors as stored, rows read)."""
        with self._page_lock:
            if self._client is None or self._closing:  # closing (a warm-up thread reads)
                raise VectorStoreUnavailable("vector store closed while reading")
            got = self._call("get", self._col.get, include=["embeddings"], **where)
        cids = self._keyed.decode(got["ids"])
        keep = [j for j, c in enumerate(cids) if c is not None]
        emb = np.asarray(got["embeddings"], dtype=np.float32)[keep] if keep else \
            np.zeros((0, self.rotation.dim), np.float32)
        return [cids[j] for j in keep], emb, len(got["ids"])  # type: ignore[misc]

    def memory(self) -> dict[str, Any]:
        exact = self._exact
        if exact is not None:
            return {"kind": "exact", "state": "ready", "vectors": len(exact),
                    "bytes": len(exact) * self.rotation.dim * 4}
        if self._cache is None or self._exact_state == "unknown":
            return {"kind": "none", "state": "none" if self._cache is None else "empty",
                    "vectors": 0, "bytes": 0}
        cache = self._cache
        return {"kind": "cache", "state": cache.state, "vectors": len(cache),
                "bytes": cache.nbytes()}

    def _pages(self, n: int, size: int = 5000) -> Iterator[tuple[list[int], np.ndarray]]:
        """Every stored vector of an index of ``n``, as stored (rotated): (chunk ids,
        vectors) a page at a time."""
        offset = 0
        while offset < n + 1:
            found, vectors, read = self._page(limit=size, offset=offset)
            if not read:
                return
            if found:
                yield found, vectors
            offset += read

    def _exact_index(self) -> ExactIndex | None:
        with self._exact_lock:
            if self._exact_state == "unknown":
                n = self.count()
                if n <= self._exact_max:
                    index = ExactIndex(self.rotation.dim)  # model space: no un-rotation
                    for ids, rotated in self._pages(n):  # of every hit read (~1 ms a query)
                        index.add(ids, self.rotation.invert(rotated))
                    self._exact, self._exact_state = index, "exact"
                else:
                    self._exact_state = "hnsw"
            return self._exact

    def query(self, vector: np.ndarray, k: int, *, found: dict[int, np.ndarray] | None = None
              ) -> list[tuple[int, float]]:
        """Nearest chunks to ``vector`` (model space): (chunk id, cosine), best first;
        with ``found``, the hits' vectors too (from memory, or returned with the hits)."""
        if k <= 0:
            return []
        exact = self._exact_index()
        if exact is not None:  # held in model space
            hits = exact.query(np.asarray(vector, dtype=np.float32).reshape(-1), k)
            if found is not None:
                found.update(exact.vectors([c for c, _ in hits]))
            return hits
        q = self.rotation.apply(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        n = self._size
        if n is None:
            n = self._size = self.count()
        if n == 0:
            return []
        if self._cache is not None and self._cache.state == "ready":
            return self._query_cached(q, min(k, n), found)
        if self._cache is not None and self._cache.state == "empty":
            self._warm_later()
        res = self._call("query", self._col.query, query_embeddings=q, n_results=min(k, n),
                         include=["embeddings"])
        cids = self._keyed.decode(res["ids"][0])
        emb = np.asarray(res["embeddings"][0], dtype=np.float32)
        keep = [j for j, c in enumerate(cids) if c is not None]
        if not keep:
            return []
        index = ExactIndex(self.rotation.dim)  # exact re-scoring, ties by chunk id
        index.add([cids[j] for j in keep], emb[keep])  # type: ignore[misc]
        hits = index.query(q[0], k)
        if found is not None:
            found.update(self._unrotate(index.vectors([c for c, _ in hits])))
        return hits

    def _warm_later(self) -> None:
        """Fill the vector cache in a thread, once per open store (a served engine warms
        up at start; a library caller that did not gets it from its first query on)."""
        with self._exact_lock:
            if self._auto_warm is not None:
                return
            # queries read the index meanwhile
            self._auto_warm = warming_thread(self.warm, "ctx-vector-cache",
                                             "vector cache not filled")
        self._auto_warm.start()

    def _query_cached(self, q: np.ndarray, k: int, found: dict[int, np.ndarray] | None
                      ) -> list[tuple[int, float]]:
        """The HNSW hits with their distances only (no vectors: 1.6 ms against 3.6 for
        50 hits at 100k), the vectors from the cache; best first, ties by chunk id.
        Chroma's cosine distance is 1 - the cosine of the unit vectors, in float32."""
        res = self._call("query", self._col.query, query_embeddings=q, n_results=k,
                         include=["distances"])
        cids = self._keyed.decode(res["ids"][0])
        hits = sorted(((c, 1.0 - float(d)) for c, d in zip(cids, res["distances"][0],
                                                          strict=True) if c is not None),
                      key=lambda h: (-h[1], h[0]))
        if found is not None and hits:
            found.update(self.vectors([c for c, _ in hits]))
        return hits

    def vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of ``ids`` (model space): from the in-memory exact index
        below ``store.exact_search_max``, else from the vector cache once loaded, else
        (and for any it lacks) read from Chroma."""
        if not ids:
            return {}
        exact = self._exact_index()
        if exact is not None:
            return exact.vectors(ids)
        cached = self._cache.vectors(ids) if self._cache is not None else None
        if cached is not None:
            missing = [c for c in ids if c not in cached]
            return {**cached, **self._read(missing)} if missing else cached
        return self._read(ids)

    def _read(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not ids:
            return {}
        found, rotated, _ = self._page(ids=self._keyed.encode(ids))
        return self._unrotate(dict(zip(found, rotated, strict=True)))

    def _unrotate(self, rotated: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        if not rotated:
            return {}
        ids = list(rotated)
        back = self.rotation.invert(np.stack([rotated[c] for c in ids]))
        return dict(zip(ids, back, strict=True))

    def count(self) -> int:
        return int(self._call("count", self._col.count))

    def close(self) -> None:
        self._closing = True  # a warm in progress stops at its next page
        waited = self._warm_lock.acquire(timeout=10)
        try:
            with self._page_lock:
                client, self._client = self._client, None
        finally:
            if waited:
                self._warm_lock.release()
        if client is None:
            return
        try:
            for owner in (client, getattr(client, "_admin_client", None)):
                session = getattr(getattr(owner, "_server", None), "_session", None)
                if session is not None:  # an HTTP client's connection pool
                    session.close()
            client.close()
        except BaseException as exc:
            if isinstance(exc, _FATAL):
                raise
        if self.backend == "embedded":
            _evict_cached_system(self._path)
            P.harden(self._path)


class OfflineVectors(VectorStore):
    """Stands in when the vector store cannot open (disk full): every call fails with
    VectorStoreUnavailable, so searches go on with the keyword lanes and an alert."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = reason

    def _down(self) -> VectorStoreUnavailable:
        return VectorStoreUnavailable(f"vector store offline: {self.reason}")

    def add(self, ids: Sequence[int], vectors: np.ndarray,
            metas: Sequence[dict[str, Any]] | None = None) -> None:
        raise self._down()

    def delete_source(self, source_id: int) -> None:
        raise self._down()

    def delete(self, ids: Sequence[int]) -> None:
        raise self._down()

    def query(self, vector: np.ndarray, k: int, *, found: dict[int, np.ndarray] | None = None
              ) -> list[tuple[int, float]]:
        raise self._down()

    def count(self) -> int:
        raise self._down()

    def reset(self) -> None:
        raise self._down()
