"""The vector lane in a worker thread beside the keyword lane (search.parallel_lanes):
the same lanes, fused order and query vector as one after the other, with and without
filters (the worker then reads rows from the vault on its own connection), and the
lane's error still reaches the caller (fake embedder, real store)."""

from __future__ import annotations

import threading

import pytest

from engine.errors import CtxError
from engine.facade import ContextEngine
from engine.flows.search.lanes import LaneResult, run_lanes
from engine.store.vault.rows import Filters

DOCS = {
    "notes/budget.md": "The packer keeps every payload within the caller's token budget.",
    "notes/keys.md": "Keys live in the system keychain; a passphrase unlocks a headless store.",
    "notes/ipc.md": "Sibling processes call the engine over ZeroMQ with signed messages.",
    "notes/tray.md": "The tray icon shows the engine's health and the last ingest.",
}


def _ingest(engine: ContextEngine) -> None:
    for name, text in DOCS.items():
        engine.wait(engine.ingest(text=text * 3, title=name, external_id=name))


def _lanes(engine: ContextEngine, parallel: bool, query: str,
           filters: Filters | None = None) -> LaneResult:
    cfg = engine.rt.cfg.with_overrides({"search": {"parallel_lanes": parallel}})
    return run_lanes(engine.rt, query, cfg=cfg, filters=filters)


@pytest.mark.parametrize("query", ["how is the token budget kept", "keychain passphrase",
                                   "zeromq signed messages between processes"])
def test_parallel_lanes_give_what_serial_lanes_give(engine: ContextEngine, query: str) -> None:
    _ingest(engine)
    serial, parallel = _lanes(engine, False, query), _lanes(engine, True, query)
    assert serial.lanes["vector"] and serial.lanes["keyword"]
    assert parallel.lanes == serial.lanes
    assert parallel.fused == serial.fused
    assert parallel.query_vector is not None and serial.query_vector is not None
    assert (parallel.query_vector == serial.query_vector).all()
    assert {"embed", "vector", "keyword"} <= set(parallel.timings)


def test_parallel_lanes_with_filters(engine: ContextEngine) -> None:
    _ingest(engine)
    keep = frozenset(s.id for s in engine.sources() if s.title in ("notes/keys.md",
                                                                        "notes/tray.md"))
    f = Filters(source_ids=tuple(sorted(keep)))
    serial = _lanes(engine, False, "engine keychain tray", f)
    parallel = _lanes(engine, True, "engine keychain tray", f)
    assert parallel.lanes == serial.lanes and parallel.lanes["vector"]
    assert all(parallel.rows[c].source_id in keep for c in parallel.lanes["vector"])


def test_the_vector_lanes_error_reaches_the_caller(engine: ContextEngine) -> None:
    _ingest(engine)
    threads: list[str] = []

    class Broken:
        name, dim = engine.rt.embedder.name, engine.rt.embedder.dim

        def encode(self, texts: list[str]) -> list[object]:
            threads.append(threading.current_thread().name)
            raise CtxError("model down")

    engine.rt.embedder = Broken()  # type: ignore[assignment]
    with pytest.raises(CtxError, match="model down"):
        _lanes(engine, True, "token budget")
    assert threads and threads[0].startswith("ctx-lane")  # it ran in the lane thread


class _SlowQueries:
    """The store's embedder, with every query held back until the test lets it go: the
    keyword lane then surely finishes first and works while the vector lane waits."""

    def __init__(self, inner: object) -> None:
        self.inner, self.go = inner, threading.Event()
        self.name, self.dim = inner.name, inner.dim  # type: ignore[attr-defined]

    def encode(self, texts: list[str]) -> object:
        assert self.go.wait(30)
        return self.inner.encode(texts)  # type: ignore[attr-defined]


def _slow_run(engine: ContextEngine, query: str, *, depth: int | None = None,
              filters: Filters | None = None) -> tuple[LaneResult, list[list[int]]]:
    """run_lanes with the query embedding held until ``while_waiting`` has run."""
    from engine.flows.search.lanes import PreScans
    from engine.flows.search.ranking import prescan

    slow = _SlowQueries(engine.rt.embedder)
    plain, engine.rt.embedder = engine.rt.embedder, slow  # type: ignore[assignment]
    seen: list[list[int]] = []

    def prepare(rows: list) -> PreScans:
        seen.append([r.id for r in rows])
        slow.go.set()  # the vector lane may run now
        return prescan(rows, engine.rt.cfg.rerank)

    try:
        engine.rt._qcache.clear()
        return (run_lanes(engine.rt, query, while_waiting=prepare, depth=depth, filters=filters),
                seen)
    finally:
        engine.rt.embedder = plain


def test_while_the_vector_lane_waits_the_keyword_hits_are_read_and_prepared(
        engine: ContextEngine) -> None:
    from engine.flows.search.ranking import PreScans, rank_hits

    _ingest(engine)
    query = "keychain passphrase tray engine budget"
    serial = run_lanes(engine.rt, query, depth=2,
                       cfg=engine.rt.cfg.with_overrides({"search": {"parallel_lanes": False}}))
    res, seen = _slow_run(engine, query, depth=2)
    assert seen == [res.lanes["keyword"]] and res.lanes["keyword"]
    assert isinstance(res.prepared, PreScans)
    assert set(res.prepared.scans) == set(res.lanes["keyword"])
    keyword_only = set(res.lanes["keyword"]) - set(res.lanes["vector"])
    assert keyword_only and keyword_only <= set(res.vectors)  # read beside the vector lane
    assert keyword_only.isdisjoint(serial.vectors)  # which the serial run does not read
    assert "read_ahead" in res.timings and "prepare" in res.timings
    assert res.lanes == serial.lanes and res.fused == serial.fused
    # The prepared scans and vectors rank exactly as the ones read in the rerank itself;
    # under another rerank config the scans made ahead are left unused.
    cfg = engine.rt.cfg
    ranked = rank_hits(engine.rt, cfg, res).ranked
    assert ranked == rank_hits(engine.rt, cfg, serial).ranked
    other = cfg.with_overrides({"rerank": {"scan_chars": 8}})
    assert rank_hits(engine.rt, other, res).ranked == rank_hits(engine.rt, other, serial).ranked


def test_build_context_is_the_same_with_and_without_reading_ahead(
        engine: ContextEngine) -> None:
    _ingest(engine)
    query = "how do sibling processes reach the engine and its keychain"
    slow = _SlowQueries(engine.rt.embedder)
    slow.go.set()
    engine.rt.embedder = slow  # type: ignore[assignment]
    plain = engine.rt.cfg
    try:
        engine.rt._qcache.clear()
        ahead = engine.build_context(query, budget=300)
        engine.rt.cfg = plain.with_overrides({"search": {"read_ahead": False}})
        engine.rt._qcache.clear()
        without = engine.build_context(query, budget=300)
    finally:
        engine.rt.cfg = plain
    assert ahead.context == without.context and ahead.items == without.items
    assert "read_ahead" not in without.timings
