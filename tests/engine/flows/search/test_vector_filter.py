"""The vector lane's filter test (``lanes.nearest``): the index's hits are over-fetched
(eight times the depth) and tested against the filter in their order; the hits past
the last one the lane keeps are not tested, a filter of kinds alone is decided in SQL
(``Vault.passing``: no row built), and the lane keeps exactly the first ``depth`` hits
that pass, as reading every hit's row and testing it does (fake embedder, real store)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
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


def _every_hit_tested(engine: ContextEngine, vec: np.ndarray, depth: int,
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


@pytest.mark.parametrize("filters", [Filters(kinds=("text",)), Filters(kinds=("conversation",)),
                                     Filters(kinds=("nothing",)),
                                     Filters(kinds=("text",), since=0.0)])
@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_the_filter_tests_the_hits_it_needs_and_keeps_what_testing_all_kept(
        engine: ContextEngine, monkeypatch: pytest.MonkeyPatch, filters: Filters,
        depth: int) -> None:
    _store(engine)
    rt = engine.rt
    read: list[int] = []  # ids whose rows were read
    decided: list[int] = []  # ids tested in SQL
    rows_of, passing = rt.vault.filter_rows, rt.vault.passing

    def counted_rows(ids: Sequence[int], *, meta: bool) -> dict[int, ChunkRow]:
        read.extend(ids)
        return rows_of(ids, meta=meta)

    def counted_passing(ids: Sequence[int], f: Filters) -> set[int]:
        decided.extend(ids)
        return passing(ids, f)

    monkeypatch.setattr(rt.vault, "filter_rows", counted_rows)
    monkeypatch.setattr(rt.vault, "passing", counted_passing)
    early = 0
    for query in ("the parser and the lexer", "keychain tray", "we talked about sockets",
                  "budget packer index"):
        vec = rt.embed_query(query)
        read.clear()
        decided.clear()
        got, sims = nearest(rt, vec, depth, filters)
        kept, needed = _every_hit_tested(engine, vec, depth, filters)
        assert got == kept
        tested = decided if filters.only_kinds else read
        assert not (read if filters.only_kinds else decided)  # kinds alone: no row built
        assert len(tested) == len(set(tested))  # no hit tested twice
        # tested in batches of 2, 4, 8... times the depth, until the batch holding the
        # last hit kept: the hits past it are not tested
        batches = [min(len(sims), 2 * depth * (2 ** n - 1)) for n in range(1, 6)]
        assert len(tested) == next(b for b in batches if b >= needed), (query, needed)
        early += len(tested) < len(sims)
    if filters.kinds == ("nothing",):
        assert early == 0  # none passes: every hit is tested, as before
    if filters.kinds == ("text",):
        assert early > 0  # the notes pass: the first batch holds them (all read before)
