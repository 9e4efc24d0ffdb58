"""search ranks as build_context does, can return distinct sources, and a text's
caller id becomes its source (fake embedder, real store)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from engine.errors import InvalidInput

PARAGRAPH = ("The kiln at the north studio fires stoneware at cone ten. "
             "Glaze tests show the kiln runs hot near the back shelf. ")


def _long_doc(n: int) -> str:
    return "\n\n".join(f"Section {i}. {PARAGRAPH * 4}" for i in range(n))


def test_distinct_sources_returns_one_hit_per_source(engine: Any) -> None:
    for i in range(3):
        engine.ingest(text=_long_doc(6), title=f"kiln notes {i}", external_id=f"notes:{i}",
                      wait=True)
    plain = engine.search("kiln glaze stoneware", k=10)
    assert len({h.source for h in plain}) < len(plain)  # several chunks per source
    distinct = engine.search("kiln glaze stoneware", k=10, distinct_sources=True)
    sources = [h.source for h in distinct]
    assert sorted(sources) == ["notes:0", "notes:1", "notes:2"]
    assert len(set(sources)) == len(sources)
    scores = [h.score for h in distinct]
    assert scores == sorted(scores, reverse=True)


def test_external_id_names_the_source_and_replaces_or_deletes_it(engine: Any) -> None:
    engine.ingest(text="The grant report is due on Friday.", title="report",
                  external_id="crm:note-17", wait=True)
    hits = engine.search("grant report due", k=5)
    assert hits and hits[0].source == "crm:note-17"
    engine.ingest(text="The grant report moved to Monday.", title="report",
                  external_id="crm:note-17", wait=True)
    texts = [h.text for h in engine.search("grant report", k=5)]
    assert any("Monday" in t for t in texts) and not any("Friday" in t for t in texts)
    assert engine.delete("crm:note-17").deleted == 1
    assert engine.search("grant report", k=5) == []


@pytest.mark.parametrize("kwargs", [{"paths": ["/tmp"], "external_id": "x"},
                                    {"text": "some text", "external_id": "  "}])
def test_external_id_needs_a_text_and_a_name(engine: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        engine.ingest(**kwargs)


def _gaps(hits: list[Any]) -> list[float]:
    return [round(a.score - b.score, 9) for a, b in itertools.pairwise(hits)]


def test_distinct_search_reranks_a_wider_window(engine: Any) -> None:
    import dataclasses

    from engine.flows.search.ranking import search

    for i in range(12):
        engine.ingest(text=f"Kiln log {i}: {PARAGRAPH} Shelf {i} ran {i * 7} degrees hot.",
                      title=f"log {i}", external_id=f"log:{i}", wait=True)
    rt = engine.rt
    base = rt.cfg
    try:
        for distinct_window, reranked in ((2, 2), (12, 12)):
            rt.cfg = dataclasses.replace(base, rerank=dataclasses.replace(
                base.rerank, window=2, distinct_window=distinct_window))
            hits = search(rt, "kiln shelf degrees hot", k=12, distinct_sources=True)
            assert len(hits) == 12
            # Past the window the fused order follows, each score 1e-6 below the last.
            assert sum(g == 1e-6 for g in _gaps(hits)) == 12 - reranked
            plain = search(rt, "kiln shelf degrees hot", k=12)
            assert [g == 1e-6 for g in _gaps(plain)[1:]] == [True] * 10  # window 2 there
    finally:
        rt.cfg = base
