"""A chat turn's query similarity read in its context (its vector mixed with the
adjacent turns' of the same session), and nothing else read that way (fake embedder,
real store)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.facade import ContextEngine
from engine.flows.search.lanes import run_lanes
from engine.flows.search.ranking import context_cosines, rank_hits, stored_vectors
from engine.retrieval.config import RerankConfig

T0 = 1_700_000_000.0

SESSION = [
    ("Ada", "How long have you kept the two turtles?"),
    ("Ben", "Three years now, and they still follow me around."),
    ("Ada", "That is lovely."),
    ("Ben", "The weather turned cold this morning."),
]


def test_context_cosines_mix_the_adjacent_vectors() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    own = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    near = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    cos = context_cosines(q, own, near, 0.5)
    # [0, 1] + 0.5 * [1, 0] = [0.5, 1]: cosine 0.5 / sqrt(1.25) to the query.
    assert cos[0] == pytest.approx(0.5 / np.sqrt(1.25))
    assert cos[1] == pytest.approx(1.0)  # no neighbours: its own cosine
    assert cos[2] == 0.0  # a zero vector has no direction
    assert context_cosines(q, own, near, 0.0)[0] == pytest.approx(0.0)


def _ingest(engine: ContextEngine) -> None:
    rows = [{"speaker": s, "text": t, "id": f"1:{i}"} for i, (s, t) in enumerate(SESSION)]
    engine.wait(engine.ingest_conversation(rows, title="session 1", uri="chat:1",
                                           session_time=T0))
    engine.wait(engine.ingest(text="Turtles live for decades and like warm water.",
                              title="turtle care"))


def _similarities(engine: ContextEngine, share: float) -> dict[str, float]:
    rt = engine.rt
    cfg = dataclasses.replace(rt.cfg, rerank=dataclasses.replace(rt.cfg.rerank,
                                                                 context_share=share))
    res = run_lanes(rt, "How long has Ben had turtles?", cfg=cfg)
    ranked = rank_hits(rt, cfg, res, all_features=True).ranked
    return {res.rows[cid].text: feats["similarity"] for cid, _, feats in ranked
            if "similarity" in feats}


def test_a_turn_is_read_with_its_neighbours_and_a_document_alone(engine: ContextEngine
                                                                 ) -> None:
    _ingest(engine)
    rt = engine.rt
    plain = _similarities(engine, 0.0)
    mixed = _similarities(engine, 0.3)
    res = run_lanes(rt, "How long has Ben had turtles?")
    rows = {r.text: r for r in res.rows.values()}
    assert len(rows) == 5  # every turn and the document are in the window
    vec = stored_vectors(rt, list(rows.values()))
    q = np.asarray(res.query_vector, dtype=np.float32)
    turns = [rows[f"{s}: {t}"] for s, t in SESSION]

    def expected(i: int) -> float:
        near = sum((vec[turns[j].id] for j in (i - 1, i + 1) if 0 <= j < len(turns)),
                   np.zeros_like(q))
        v = vec[turns[i].id] + 0.3 * near
        return float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))

    for i, row in enumerate(turns):
        assert mixed[row.text] == pytest.approx(max(0.0, min(1.0, expected(i))), abs=1e-5)
    # Share 0 is the turn alone (the first and last turns above had one neighbour).
    assert plain[turns[1].text] == pytest.approx(
        max(0.0, float(vec[turns[1].id] @ q)), abs=1e-5)
    doc = next(t for t in rows if t.startswith("Turtles live"))
    assert mixed[doc] == pytest.approx(plain[doc], abs=1e-6)


def test_chunks_at_reads_the_given_places_only(engine: ContextEngine) -> None:
    _ingest(engine)
    vault = engine.rt.vault
    rows = run_lanes(engine.rt, "turtles").rows.values()
    sid = next(r.source_id for r in rows if r.kind == "turn")
    found = vault.chunks_at([(sid, 1), (sid, 3), (sid, 99), (sid, 1)])
    assert sorted(found) == [(sid, 1), (sid, 3)]
    cid, kind, heading = found[(sid, 1)]
    assert vault.chunks([cid])[cid].text.startswith("Ben: Three years now")
    assert (kind, heading) == ("turn", "")
    assert vault.chunks_at([]) == {}


@pytest.mark.parametrize("kwargs", [{"context_share": 1.5}, {"context_share": -0.1},
                                    {"context_kinds": "turn"}])
def test_context_config_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RerankConfig(**kwargs)  # type: ignore[arg-type]
