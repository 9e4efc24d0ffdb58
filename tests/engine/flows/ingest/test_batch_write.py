"""A write batch adds all its documents' vectors in one vector-store call, and a failed
vector stage leaves the batch's documents keyword-searchable, waiting for their vectors
(staged ingestion), until a later vector stage makes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.embedding.fake import FakeEmbedder
from engine.errors import VectorStoreUnavailable
from engine.facade import ContextEngine


def _folder(tmp_path: Path, n: int) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(n):
        (docs / f"d{i}.md").write_text(f"# Note {i}\n\nPlain words about lantern number {i}.\n")
    return docs


def _counts(eng: ContextEngine) -> tuple[int, int, int]:
    q = eng.rt.vault._query
    return (q("SELECT count(*) FROM sources")[0][0], q("SELECT count(*) FROM chunks")[0][0],
            eng.rt.vectors.count())


def test_one_vector_call_per_batch(data_dir: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _folder(tmp_path, 6)
    with ContextEngine.open(data_dir, embedder=FakeEmbedder()) as eng:
        calls: list[int] = []
        add = eng.rt.vectors.add

        def counting(ids: Any, vectors: Any, metas: Any = None) -> None:
            calls.append(len(ids))
            add(ids, vectors, metas)

        monkeypatch.setattr(eng.rt.vectors, "add", counting)
        snap = eng.wait(eng.ingest(paths=[str(docs)]), timeout=60)
        assert snap.state == "done" and snap.files_done == 6
        assert calls == [6]  # one document at a time, it was six calls
        assert _counts(eng) == (6, 6, 6)
        assert {h.source.rsplit("/", 1)[-1] for h in eng.search("lantern number 4", k=6)} \
            == {f"d{i}.md" for i in range(6)}


def test_a_failed_vector_stage_leaves_the_documents_keyword_ready(
        data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _folder(tmp_path, 4)
    with ContextEngine.open(data_dir, embedder=FakeEmbedder()) as eng:
        kept = eng.wait(eng.ingest(text="A note kept from before.", external_id="kept"))
        assert kept.state == "done"
        before = _counts(eng)

        def broken(*_: Any, **__: Any) -> None:
            raise VectorStoreUnavailable("vector store add failed: test")

        monkeypatch.setattr(eng.rt.vectors, "add", broken)
        snap = eng.wait(eng.ingest(paths=[str(docs)]), timeout=60)
        assert snap.state == "failed" and snap.error is not None
        assert snap.error.name == "vector_store_unavailable" and len(snap.sources) == 4
        assert _counts(eng) == (before[0] + 4, before[1] + 4, before[2])  # no vector
        assert {s.stage for s in eng.sources() if s.uri.startswith(str(docs))} == {"keyword"}
        hits = eng.search("lantern number 3", k=4)
        assert hits and {h.stage for h in hits} == {"keyword"} and \
            all("vector" not in h.lanes for h in hits)
        status = eng.status()
        assert (status.sources_waiting, status.chunks_waiting) == (4, 4)
        assert "context_engine.ingestion.failed" in status.alerts
        monkeypatch.undo()
        again = eng.wait(eng.ingest(paths=[str(docs)]), timeout=60)
        assert again.state == "done" and again.files_unchanged == 4
        assert (again.to_embed, again.embedded) == (4, 4)  # it made the waiting ones
        assert _counts(eng) == (before[0] + 4, before[1] + 4, before[2] + 4)
        assert {s.stage for s in eng.sources()} == {"ready"}
        assert eng.status().sources_waiting == 0
        assert "context_engine.ingestion.failed" not in eng.status().alerts
