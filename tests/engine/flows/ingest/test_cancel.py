"""Cancelling ingestion jobs on a real vault: what was stored stays, the rest is absent.

A job stores text first (keyword stage), then makes vectors (vector stage). A cancel
in the keyword stage keeps the files already stored; one in the vector stage keeps
every source keyword-searchable, and their vectors are made by the next vector stage
(a later ingest, or the engine's warm-up at the next open) from where it stopped."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.api import Event, JobChanged, JobSnapshot
from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine
from engine.flows.ingest.keyword_stage import BATCH_CHUNKS
from engine.flows.ingest.vector_stage import STEP_TEXTS


class GatedEmbedder(FakeEmbedder):
    """The fake embedder, holding its ``hold_at``-th call until ``gate`` opens."""

    def __init__(self, hold_at: int) -> None:
        super().__init__()
        self.hold_at = hold_at
        self.entered = threading.Event()
        self.gate = threading.Event()

    sizes: list[int]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.sizes = getattr(self, "sizes", [])
        self.sizes.append(len(texts))
        if self.calls + 1 == self.hold_at:
            self.entered.set()
            self.gate.wait(30)
        return super().encode(texts)


def _store_state(eng: ContextEngine) -> dict[str, Any]:
    vault = eng.rt.vault
    return {
        "uris": sorted(s.uri for s in eng.sources()),
        "pending": vault._query("SELECT count(*) FROM sources WHERE state != 'ready'")[0][0],
        "chunks": vault._query("SELECT count(*) FROM chunks")[0][0],
        "vectors": eng.rt.vectors.count(),
        "cache": vault._query("SELECT count(*) FROM embed_cache")[0][0],
    }


def _long_text(n_paragraphs: int, word: str) -> str:
    para = f"The {word} paragraph {{i}} describes tides, harbours and ropes at some length. " * 20
    return "\n\n".join(para.format(i=i) for i in range(n_paragraphs))


def test_cancel_in_the_vector_stage_keeps_the_source_keyword_ready(data_dir: Path,
                                                                   tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(_long_text(200, "lighthouse"))
    emb = GatedEmbedder(hold_at=3)  # call 1: the earlier text; 2, 3...: big.md's steps
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        kept = eng.wait(eng.ingest(text="A kept note about anchors.", title="kept"))
        assert kept.state == "done"
        before = _store_state(eng)
        jid = eng.ingest(paths=[str(big)])
        assert emb.entered.wait(30)
        snap = eng.cancel_job(jid)
        assert snap.id == jid and snap.state == "running" and snap.stage == "vectors"
        emb.gate.set()
        final = eng.wait(jid, timeout=30)
        assert final.state == "cancelled" and len(final.sources) == 1
        assert 0 < final.embedded < final.to_embed == final.chunks > STEP_TEXTS
        after = _store_state(eng)
        assert after["vectors"] == before["vectors"]  # none of big.md's is in yet
        assert after["pending"] == 0 and after["chunks"] == before["chunks"] + final.chunks
        assert after["cache"] == before["cache"] + final.embedded  # kept for the resume
        assert [s.stage for s in eng.sources() if s.uri == str(big)] == ["keyword"]
        assert eng.search("lighthouse harbours", k=1)[0].stage == "keyword"
        # Ingesting the same file again finishes it (its waiting vectors are that job's
        # own work), embedding only what was not cached.
        calls = emb.calls
        again = eng.wait(eng.ingest(paths=[str(big)]), timeout=60)
        assert again.state == "done" and again.files_unchanged == 1
        assert again.to_embed == again.embedded == final.chunks
        assert _store_state(eng)["vectors"] == before["vectors"] + final.chunks
        assert [s.stage for s in eng.sources() if s.uri == str(big)] == ["ready"]
        embedded_again = sum(emb.sizes[calls:])
        assert embedded_again == final.chunks - final.embedded


def test_a_new_small_ingest_does_not_wait_behind_an_interrupted_vector_stage(
        data_dir: Path, tmp_path: Path) -> None:
    """Issue 32: a one-line ingest after an interrupted one waited at `meaning-search 0%`
    for the interrupted job's vectors: it owned them. Now they go to a background job
    that runs after the new job's own vector work."""
    big = tmp_path / "big.md"
    big.write_text(_long_text(200, "lighthouse"))
    emb = GatedEmbedder(hold_at=2)
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        jid = eng.ingest(paths=[str(big)])
        assert emb.entered.wait(30)
        eng.cancel_job(jid)
        emb.gate.set()
        big_job = eng.wait(jid, timeout=30)
        assert big_job.state == "cancelled" and big_job.embedded < big_job.to_embed
        small = eng.wait(eng.ingest(text="One line about anchors.", title="one"), 60)
        assert small.state == "done" and small.to_embed == small.chunks == small.embedded
        [background] = [j for j in eng.jobs() if j.kind == "vectors"]
        background = eng.wait(background.id, timeout=60)
        assert background.state == "done"
        assert background.to_embed == big_job.chunks
        assert small.finished is not None and background.finished is not None
        assert small.finished <= background.finished  # the small one went first


def test_cancel_between_batches_keeps_the_files_already_written(data_dir: Path,
                                                               tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3 * BATCH_CHUNKS):  # one chunk each: three batches of stored text
        (docs / f"d{i:03}.md").write_text(f"# Note {i}\n\nPlain words about topic number {i}.\n")
    with ContextEngine.open(data_dir) as eng:
        cancelled: list[JobSnapshot] = []

        def on_progress(event: Event) -> None:
            snap = event.job if isinstance(event, JobChanged) else None
            if snap and snap.kind == "paths" and len(snap.sources) == 2 and not cancelled:
                cancelled.append(eng.cancel_job(snap.id))

        eng.subscribe(on_progress)
        final = eng.wait(eng.ingest(paths=[str(docs)]), timeout=30)
        assert cancelled and final.state == "cancelled"
        assert len(final.sources) == BATCH_CHUNKS  # the batch being stored, whole
        state = _store_state(eng)
        assert state["uris"] == [str(docs / f"d{i:03}.md") for i in range(BATCH_CHUNKS)]
        assert state["pending"] == 0 and state["vectors"] == 0  # the keyword stage's
        assert eng.status().sources_waiting == BATCH_CHUNKS
    with ContextEngine.open(data_dir) as eng:  # and it all survives a reopen
        assert len(_store_state(eng)["uris"]) == BATCH_CHUNKS
        eng.warm_up(background=False)  # an engine that keeps running makes the vectors
        resumed = [j for j in eng.jobs() if j.kind == "vectors"]
        assert len(resumed) == 1 and eng.wait(resumed[0].id, 30).state == "done"
        state = _store_state(eng)
        assert state["vectors"] == state["chunks"] == BATCH_CHUNKS


def test_cancel_queued_job_and_cancel_all(data_dir: Path, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nSomething worth keeping.\n")
    with ContextEngine.open(data_dir) as eng:
        eng.pause_ingestion()
        a = eng.ingest(paths=[str(note)])
        b = eng.ingest(text="queued text that will never be stored")
        assert eng.cancel_job(b).state == "cancelled"
        snaps = eng.cancel_all()
        assert [s.id for s in snaps] == [a]
        eng.resume_ingestion()
        assert eng.wait(a, timeout=10).state == "cancelled"
        assert eng.sources() == []
        assert not eng.status().jobs_active
