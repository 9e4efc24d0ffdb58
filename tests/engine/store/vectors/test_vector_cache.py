"""The in-memory vector cache of a big store: filled once, kept in step with writes
(those made while it fills included), bounded, and giving the index's own vectors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.facade import ContextEngine
from engine.flows.runtime import Runtime
from engine.flows.search.ranking import stored_vectors
from engine.store.vectors.cache import VectorCache
from engine.store.vectors.index import ChromaVectors, warming_thread


@pytest.fixture(autouse=True)
def _embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the embedded Chroma store (the default keeps vectors in
    memory, tests/engine/store/vectors/test_vector_snapshot.py)."""
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")

DIM = 8


def _chroma(rt: Runtime) -> ChromaVectors:
    """The engine's vector store, which these tests set to the embedded Chroma one."""
    assert isinstance(rt.vectors, ChromaVectors)
    return rt.vectors


def _cache(rt: Runtime) -> VectorCache:
    cache = _chroma(rt)._cache
    assert cache is not None
    return cache


def _vecs(ids: list[int], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((len(ids), DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _pages(ids: list[int], vecs: np.ndarray, size: int = 3) -> Iterator[tuple[list[int], np.ndarray]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size], vecs[i:i + size]


def test_nothing_is_answered_until_loaded_then_vectors_come_back_as_float16() -> None:
    cache = VectorCache(DIM, 1 << 20)
    ids = list(range(10, 20))
    vecs = _vecs(ids)
    assert cache.vectors(ids) is None
    assert cache.load(len(ids), _pages(ids, vecs))
    got = cache.vectors(ids + [999])
    assert got is not None and set(got) == set(ids)
    for j, c in enumerate(ids):
        assert got[c].dtype == np.float32
        assert np.array_equal(got[c], vecs[j].astype(np.float16).astype(np.float32))
    assert cache.nbytes() >= len(ids) * DIM * 2


def test_writes_made_while_loading_are_replayed_in_order() -> None:
    cache = VectorCache(DIM, 1 << 20)
    ids = list(range(12))
    vecs = _vecs(ids)
    late = _vecs([100, 3], seed=1)

    def pages() -> Iterator[tuple[list[int], np.ndarray]]:
        for n, page in enumerate(_pages(ids, vecs)):
            if n == 1:  # the index changes under the load
                cache.delete([0, 5])
                cache.add([100, 3], late)
                cache.delete([100])
                cache.add([100], late[:1])
            yield page

    assert cache.load(len(ids), pages())
    got = cache.vectors([*ids, 100])
    assert got is not None
    assert 0 not in got and 5 not in got  # deleted, though its page came after
    assert np.allclose(got[100], late[0], atol=1e-3)
    assert np.allclose(got[3], late[1], atol=1e-3)  # replaced, not the page's copy
    assert np.allclose(got[7], vecs[7], atol=1e-3)


def test_a_reset_while_loading_drops_the_load() -> None:
    cache = VectorCache(DIM, 1 << 20)
    ids = list(range(9))

    def pages() -> Iterator[tuple[list[int], np.ndarray]]:
        yield ids[:3], _vecs(ids[:3])
        cache.reset()
        yield ids[3:], _vecs(ids[3:])

    assert not cache.load(len(ids), pages())
    assert cache.vectors(ids) is None and cache.state == "empty"
    assert cache.load(3, _pages(ids[:3], _vecs(ids[:3])))  # a later load fills it


def test_a_failed_load_leaves_it_empty_for_a_retry() -> None:
    cache = VectorCache(DIM, 1 << 20)

    def broken() -> Iterator[tuple[list[int], np.ndarray]]:
        yield [1, 2], _vecs([1, 2])
        raise OSError("index went away")

    with pytest.raises(OSError):
        cache.load(4, broken())
    assert cache.state == "empty" and cache.vectors([1]) is None


def test_the_memory_bound_turns_it_off_at_load_and_as_it_grows() -> None:
    per_vector = DIM * 2
    small = VectorCache(DIM, 5 * per_vector)
    assert not small.load(6, _pages(list(range(6)), _vecs(list(range(6)))))
    assert small.state == "off" and small.vectors([1]) is None
    grows = VectorCache(DIM, 5 * per_vector)
    assert grows.load(4, _pages(list(range(4)), _vecs(list(range(4)))))
    grows.add([4], _vecs([4]))
    assert grows.vectors([4]) is not None and len(grows) == 5
    assert grows.nbytes() <= 5 * per_vector
    grows.add([5], _vecs([5]))
    assert grows.state == "off" and grows.vectors([0]) is None and grows.nbytes() == 0
    lying = VectorCache(DIM, 5 * per_vector)  # the index holds more than it said
    assert not lying.load(3, _pages(list(range(8)), _vecs(list(range(8)))))
    assert lying.state == "off"


def test_the_matrix_never_grows_past_the_bound() -> None:
    bound = 3000 * DIM * 2
    cache = VectorCache(DIM, bound)
    ids = list(range(2500))
    assert cache.load(len(ids), _pages(ids, _vecs(ids), size=500))
    assert cache.nbytes() <= bound
    more = list(range(10_000, 10_450))
    cache.add(more, _vecs(more))  # grows, within the bound
    assert cache.state == "ready" and len(cache) == 2950 and cache.nbytes() <= bound
    got = cache.vectors(more[-3:])
    assert got is not None and np.allclose(got[more[-1]], _vecs(more)[-1], atol=1e-3)


def test_deleted_rows_are_reused() -> None:
    cache = VectorCache(DIM, 1 << 20)
    ids = list(range(6))
    assert cache.load(len(ids), _pages(ids, _vecs(ids)))
    before = cache.nbytes()
    previous = 0
    for new in range(100, 160):
        cache.delete([previous])
        cache.add([new], _vecs([new], seed=new))
        previous = new
    assert len(cache) == 6 and cache.nbytes() == before
    got = cache.vectors([159])
    assert got is not None and np.allclose(got[159], _vecs([159], seed=159)[0], atol=1e-3)


TEXT = "\n\n".join(
    f"Section {i}. The harbour ferry {i} leaves at dawn with rope, sail and cargo number {i}."
    for i in range(40))


def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__CHUNKING__TARGET_TOKENS", "32")
    monkeypatch.setenv("CTX__CHUNKING__MAX_TOKENS", "40")
    monkeypatch.setenv("CTX__CHUNKING__OVERLAP_TOKENS", "4")


def test_a_big_store_answers_from_the_cache_once_warm(data_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """On the HNSW path (exact_search_max 0), the real Chroma store: before warm-up the
    vectors are read from Chroma; after it from the cache, to float16 precision, and the
    query's hits and cosines are the same; writes after warm-up reach it."""
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
        rt = eng.rt
        ids = [r[0] for r in rt.vault._query("SELECT id FROM chunks ORDER BY id")]
        want = stored_vectors(rt, list(rt.vault.chunks(ids).values()))
        q = rt.embed_query("ferry cargo")
        assert rt.vectors.vectors(ids[:3]) and _cache(rt).state == "empty"
        eng.warm_up(background=False)
        assert _cache(rt).state == "ready" and len(_cache(rt)) == len(ids)
        assert eng.status().vectors_in_memory.to_dict() == {
            "kind": "cache", "state": "ready", "vectors": len(ids),
            "bytes": _cache(rt).nbytes()}
        warm: dict[int, np.ndarray] = {}
        warm_hits = rt.vectors.query(q, 8, found=warm)
        # (which 8 HNSW returns for 40 vectors may change as Chroma indexes its log, so
        # the hits are checked against the exact cosines, not against an earlier query)
        assert len(warm_hits) == 8 and set(warm) == {c for c, _ in warm_hits}
        assert [s for _, s in warm_hits] == sorted((s for _, s in warm_hits), reverse=True)
        for cid, sim in warm_hits:
            assert abs(sim - float(want[cid] @ q)) < 1e-5
            assert np.allclose(warm[cid], want[cid], atol=2e-3)
        got = rt.vectors.vectors(ids)
        for cid in ids:
            assert np.allclose(got[cid], want[cid], atol=2e-3)
        _cache(rt).reset()  # warm-up reads by the vault's ids; without them, by pages
        _chroma(rt)._chunk_ids = None
        rt.vectors.warm()
        paged = rt.vectors.vectors(ids)
        assert _cache(rt).state == "ready"
        assert all(np.array_equal(paged[c], got[c]) for c in ids)
        eng.wait(eng.ingest(text="A lighthouse keeper logs the storm at midnight.", title="log"))
        new = [r[0] for r in rt.vault._query("SELECT id FROM chunks ORDER BY id")
               if r[0] not in set(ids)]
        assert new and set(new) <= set(_cache(rt).vectors(new) or {})
        source = rt.vault._query("SELECT source_id FROM chunks WHERE id = ?", [ids[0]])[0][0]
        eng.delete(source)
        assert not _cache(rt).vectors(ids)  # gone from the cache with the index
        assert eng.build_context("lighthouse storm", budget=200).items


def test_a_store_growing_past_the_exact_size_moves_to_the_cache(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "20")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        rt = eng.rt
        eng.wait(eng.ingest(text="The ferry leaves at dawn.", title="one"))
        eng.warm_up(background=False)
        assert _chroma(rt)._exact_index() is not None and _cache(rt).state == "empty"
        memory = eng.status().vectors_in_memory
        assert memory.kind == "exact" and memory.vectors == 1
        eng.wait(eng.ingest(text=TEXT, title="ferries"))  # past 20 vectors
        ids = [r[0] for r in rt.vault._query("SELECT id FROM chunks ORDER BY id")]
        assert len(ids) > 20 and _chroma(rt)._exact_index() is None
        assert _cache(rt).state == "ready"
        want = stored_vectors(rt, list(rt.vault.chunks(ids).values()))
        got = _cache(rt).vectors(ids)
        assert got is not None and set(got) == set(ids)
        for cid in ids:
            assert np.allclose(got[cid], want[cid], atol=2e-3)


def test_no_cache_when_turned_off(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    monkeypatch.setenv("CTX__STORE__VECTOR_CACHE_MB", "0")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
        eng.warm_up(background=False)
        assert _chroma(eng.rt)._cache is None
        ids = [r[0] for r in eng.rt.vault._query("SELECT id FROM chunks ORDER BY id")]
        assert set(eng.rt.vectors.vectors(ids)) == set(ids)  # read from Chroma


def test_a_rebuild_fills_the_cache_again(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
        eng.warm_up(background=False)
        cache = _cache(eng.rt)
        assert cache.state == "ready"
        eng.repair(wait=True)  # resets the index, then adds every vector again
        ids = eng.rt.vault.chunk_ids()
        assert cache.state == "ready" and len(cache) == len(ids)
        want = stored_vectors(eng.rt, list(eng.rt.vault.chunks(ids).values()))
        got = cache.vectors(ids)
        assert got is not None and all(np.allclose(got[c], want[c], atol=2e-3) for c in ids)


def test_an_engine_not_warmed_up_fills_the_cache_from_its_first_query(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
    with ContextEngine.open(data_dir) as eng:  # a library caller: no warm_up
        vectors = _chroma(eng.rt)
        assert _cache(eng.rt).state == "empty" and vectors._auto_warm is None
        first = eng.build_context("ferry cargo", budget=300)  # answered from the index
        thread = vectors._auto_warm
        assert first.items and thread is not None
        thread.join(30)
        assert _cache(eng.rt).state == "ready"
        assert len(_cache(eng.rt)) == len(eng.rt.vault.chunk_ids())
        assert eng.build_context("rope and sail", budget=300).items
        assert vectors._auto_warm is thread  # once per open store


def test_a_chunk_added_while_the_ids_are_listed_is_cached(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ids are listed once the cache is loading, so a chunk added before that is in
    the list and one added after is logged and replayed."""
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    _small_chunks(monkeypatch)
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
        rt = eng.rt
        listed = rt.vault.chunk_ids

        def list_then_add() -> list[int]:
            ids = listed()
            eng.wait(eng.ingest(text="A lighthouse keeper logs the storm.", title="log"))
            return ids

        rt.vectors.warm(list_then_add)
        assert _cache(rt).state == "ready"
        assert len(_cache(rt)) == len(rt.vault.chunk_ids())


def test_close_stops_a_warm_in_progress(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__EXACT_SEARCH_MAX", "0")
    _small_chunks(monkeypatch)
    import threading

    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text=TEXT, title="ferries"))
    eng = ContextEngine.open(data_dir)
    vectors, vault = _chroma(eng.rt), eng.rt.vault
    listing, release = threading.Event(), threading.Event()

    def slow_ids() -> list[int]:
        listing.set()
        release.wait(10)
        return vault.chunk_ids()

    warm = warming_thread(vectors.warm, "ctx-vector-cache", "vector cache not filled")
    vectors._chunk_ids = slow_ids
    warm.start()
    assert listing.wait(10)
    closer = threading.Thread(target=eng.close)
    closer.start()
    for _ in range(1000):  # close has begun: it waits for the warm to stop
        if vectors._closing:
            break
        time.sleep(0.01)
    release.set()
    closer.join(20)
    warm.join(20)
    assert not closer.is_alive() and not warm.is_alive()
    assert vectors._cache is not None and vectors._cache.state == "empty"  # stopped, nothing half-filled
    assert not vault._all  # no vault connection left open behind the close
