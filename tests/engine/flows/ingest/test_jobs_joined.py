"""Text and conversation jobs queued one behind the other run together, each keeping
its own outcome: one model pass for the group, per-job states, cancel and errors."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.api import Event, JobChanged
from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine


class GatedEmbedder(FakeEmbedder):
    """The fake embedder; with ``gated``, its first call waits until ``gate`` opens."""

    def __init__(self, gated: bool = False) -> None:
        super().__init__()
        self.gated = gated
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.texts = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        if self.gated and self.calls == 0:
            self.entered.set()
            self.gate.wait(30)
        return super().encode(texts)


def _texts(eng: ContextEngine) -> dict[str, str]:
    """uri -> the stored text of every ready source (chunks in order)."""
    rows = eng.rt.vault._query(
        "SELECT s.uri, c.text FROM sources s JOIN chunks c ON c.source_id = s.id "
        "WHERE s.state = 'ready' ORDER BY s.id, c.ordinal")
    out: dict[str, str] = {}
    for uri, text in rows:
        out[uri] = out.get(uri, "") + text
    return out


def _queue_paused(eng: ContextEngine, items: Sequence[tuple[str, str]]) -> list[str]:
    """Queue texts (external id, text) while ingestion is paused, then resume."""
    eng.pause_ingestion()
    ids = [eng.ingest(text=text, title=uri, external_id=uri) for uri, text in items]
    eng.resume_ingestion()
    return ids


def test_queued_texts_share_one_model_pass_and_keep_their_own_jobs(data_dir: Path) -> None:
    emb = GatedEmbedder()
    items = [(f"note:{i}", f"Note {i} is about harbour number {i} and its cranes.")
             for i in range(12)]
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        ids = _queue_paused(eng, items)
        snaps = [eng.wait(j, timeout=60) for j in ids]
        assert [s.state for s in snaps] == ["done"] * 12
        assert all(len(s.sources) == 1 and s.chunks == 1 for s in snaps)
        assert len({s.sources[0] for s in snaps}) == 12
        assert emb.calls <= 3 and emb.texts == 12  # one by one, it took 12 calls
        assert _texts(eng) == dict(items)
        assert eng.rt.vectors.count() == 12
        assert len(eng.search("cranes of harbour number 7", k=3)) == 3


def test_the_same_id_twice_in_a_group_keeps_the_later_text(data_dir: Path) -> None:
    with ContextEngine.open(data_dir, embedder=GatedEmbedder()) as eng:
        ids = _queue_paused(eng, [("doc:a", "The first version mentions copper."),
                                  ("doc:b", "Another note on tin."),
                                  ("doc:a", "The second version mentions zinc.")])
        assert [eng.wait(j, timeout=60).state for j in ids] == ["done"] * 3
        assert _texts(eng) == {"doc:a": "The second version mentions zinc.",
                               "doc:b": "Another note on tin."}
        versions = eng.rt.vault._query("SELECT count(*) FROM sources WHERE uri = 'doc:a' "
                                      "AND state = 'ready'")[0][0]
        assert versions == 1
        chunks = eng.rt.vault._query("SELECT count(*) FROM chunks")[0][0]
        assert eng.rt.vectors.count() == chunks == 2


def test_a_job_cancelled_while_its_group_runs_is_not_stored(data_dir: Path) -> None:
    with ContextEngine.open(data_dir, embedder=GatedEmbedder()) as eng:
        ids: list[str] = []
        told: list[str] = []

        def cancel_second(event: Event) -> None:  # on the writer thread, as the group starts
            if isinstance(event, JobChanged) and event.job.state == "running" and ids \
                    and event.job.id == ids[0] and not told:
                told.append(eng.cancel_job(ids[1]).state)

        eng.subscribe(cancel_second)
        eng.pause_ingestion()
        ids += [eng.ingest(text=f"Plain note {i} on rivers.", title=f"n:{i}",
                           external_id=f"n:{i}") for i in range(3)]
        eng.resume_ingestion()
        states = [eng.wait(j, timeout=60).state for j in ids]
        assert told == ["running"]  # it had started with its group
        assert states == ["done", "cancelled", "done"]
        assert set(_texts(eng)) == {"n:0", "n:2"}
        assert eng.rt.vectors.count() == 2
        assert eng.job(ids[1]).sources == ()


def test_a_bad_document_fails_alone(data_dir: Path) -> None:
    with ContextEngine.open(data_dir, embedder=GatedEmbedder()) as eng:
        eng.pause_ingestion()
        good1 = eng.ingest(text="Good note one about kites.", external_id="g:1")
        bad = eng.ingest(text="   \n ", external_id="g:bad")
        conv = eng.ingest_conversation([{"speaker": "Ann", "text": "Hello there"},
                                        {"speaker": "", "text": "no speaker"}],
                                       title="broken", uri="c:bad")
        good2 = eng.ingest(text="Good note two about sails.", external_id="g:2")
        eng.resume_ingestion()
        assert eng.wait(good1, timeout=60).state == "done"
        assert eng.wait(good2, timeout=60).state == "done"
        for jid in (bad, conv):
            snap = eng.wait(jid, timeout=60)
            assert snap.state == "failed" and snap.error is not None and snap.error.name == "invalid_input"
        assert set(_texts(eng)) == {"g:1", "g:2"}
