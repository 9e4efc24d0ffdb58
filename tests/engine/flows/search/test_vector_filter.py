"""The vector lane's filter test (``lanes.nearest``): the index's hits are over-fetched
(eight times the depth) and tested against the filter in their order; the rows of the
hits past the last one the lane keeps are not read, and the lane keeps exactly the
first ``depth`` hits that pass, as testing every hit does (fake embedder, real store)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.facade import ContextEngine
from engine.flows.search.lanes import SIM_DIGITS, nearest
from engine.store.vault.core import ChunkRow
from engine.store.vault.rows import Filters

WORDS = ("parser", "lexer", "budget", "keychain", "tray", "socket", "packer", "index")


def _store(engine: ContextEngine) -> None:
    for i in range(24):
        body = f"Note {i} about the {WORDS[i % len(WORDS)]} and the {WORDS[(i * 3) % 8]}. "
        engine.wait(engine.ingest(text=body * 4, title=f"note {i}", external_id=f"n{i}"))
    engine.wait(engine.ingest_conversation(
        [{"speaker": "A", "text": f"we talked about the {w}", "time": 1.7e9 + j}
         for j, w in enumerate(WORDS)], title="chat", uri="chat:1"))


def _every_hit_tested(engine: ContextEngine, vec: object, depth: int,
                      filters: Filters) -> tuple[list[int], int]:
    """The lane's former answer (all the over-fetched hits read and tested), and how
    many of the hits, in order, it takes to find it (all of them when fewer pass)."""
    found = sorted(((cid, round(sim, SIM_DIGITS))
                    for cid, sim in engine.rt.vectors.query(vec, depth * 8)),
                   key=lambda hit: (-hit[1], hit[0]))
    rows = engine.rt.vault.chunks([cid for cid, _ in found])
    kept = [cid for cid, _ in found if cid in rows and filters.matches(rows[cid])][:depth]
    ids = [cid for cid, _ in found]
    return kept, (ids.index(kept[-1]) + 1 if len(kept) == depth else len(ids))


@pytest.mark.parametrize("kinds", [("text",), ("conversation",), ("nothing",)])
@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_the_filter_reads_the_hits_it_needs_and_keeps_what_testing_all_kept(
        engine: ContextEngine, monkeypatch: pytest.MonkeyPatch, kinds: tuple[str, ...],
        depth: int) -> None:
    _store(engine)
    rt = engine.rt
    read: list[int] = []
    real = rt.vault.filter_rows

    def counted(ids: Sequence[int], *, meta: bool) -> dict[int, ChunkRow]:
        read.extend(ids)
        return real(ids, meta=meta)

    monkeypatch.setattr(rt.vault, "filter_rows", counted)
    filters = Filters(kinds=kinds)
    early = 0
    for query in ("the parser and the lexer", "keychain tray", "we talked about sockets",
                  "budget packer index"):
        vec = rt.embed_query(query)
        read.clear()
        got, sims = nearest(rt, vec, depth, filters)
        kept, needed = _every_hit_tested(engine, vec, depth, filters)
        assert got == kept
        assert len(read) == len(set(read))  # no hit read twice
        # read in batches of 2, 4, 8... times the depth, until the batch holding the
        # last hit kept: the hits past it are not read
        batches = [min(len(sims), 2 * depth * (2 ** n - 1)) for n in range(1, 6)]
        assert len(read) == next(b for b in batches if b >= needed), (query, needed, read)
        early += len(read) < len(sims)
    if kinds == ("nothing",):
        assert early == 0  # none passes: every hit is read, as before
    if kinds == ("text",):
        assert early > 0  # the notes pass: the first batch holds them (read all before)
