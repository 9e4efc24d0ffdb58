"""The store suite: ingest, search, re-ingest, delete, filters; on both vector backends."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.errors import ModelMismatch, NotFound, StoreLocked
from engine.facade import ContextEngine


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(root, "garden.md", "# Garden\n\nTomatoes need full sun and deep watering twice a week.\n")
    _write(root, "bikes.md", "# Bicycles\n\nA chain should be oiled every 300 kilometres.\n")
    _write(root, "notes/rust.md", "# Rust\n\nThe borrow checker enforces ownership rules.\n")
    _write(root, "code/app.py", "def handler(event):\n    return event['body']\n")
    return root


def test_ingest_search_both_lanes(backend: str, data_dir: Path, docs: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        job = eng.wait(eng.ingest(paths=[str(docs)]))
        assert job.state == "done", job
        assert job.files_done == 4 and not job.errors
        hits = eng.search("how often should the chain be oiled", k=3)
        assert hits and hits[0].source.endswith("bikes.md")
        assert {"keyword", "vector"} <= set(hits[0].lanes)
        assert eng.status().vector_backend == backend
        assert eng.status().vectors == eng.status().chunks


def test_unchanged_reingest_costs_nothing(backend: str, data_dir: Path, docs: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        embedded = eng._writer.embedded_texts
        chunks = eng.status().chunks
        job = eng.wait(eng.ingest(paths=[str(docs)]))
        assert job.files_unchanged == 4
        assert eng._writer.embedded_texts == embedded
        assert eng.status().chunks == chunks


def test_changed_source_replaces_its_chunks(backend: str, data_dir: Path, docs: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        _write(docs, "garden.md", "# Garden\n\nCucumbers climb trellises in July.\n")
        eng.wait(eng.ingest(paths=[str(docs / "garden.md")]))
        assert len([s for s in eng.sources() if s.uri.endswith("garden.md")]) == 1
        texts = [h.text for h in eng.search("tomatoes full sun watering", k=10)]
        assert not any("Tomatoes" in t for t in texts)
        assert any("Cucumbers" in h.text for h in eng.search("cucumbers trellis", k=3))
        assert eng.status().vectors == eng.status().chunks


def test_delete_removes_text_chunks_and_vectors(backend: str, data_dir: Path, docs: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        before = eng.status()
        out = eng.delete(str(docs / "bikes.md"))
        assert out.deleted == 1
        after = eng.status()
        assert after.sources == before.sources - 1
        assert after.vectors == after.chunks
        assert all("chain" not in h.text for h in eng.search("chain oiled kilometres", k=10))
        with pytest.raises(NotFound):
            eng.delete(str(docs / "bikes.md"))


def test_filters(backend: str, data_dir: Path, docs: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        eng.wait(eng.ingest(text="ownership and borrowing in a note", title="note"))
        only_notes = eng.search("ownership", k=10, path_prefix=str(docs / "notes"))
        assert only_notes and all(h.source.startswith(str(docs / "notes")) for h in only_notes)
        code = eng.search("handler event body", k=10, kinds=["code"])
        assert code and all(h.source_kind == "code" or h.kind == "code" for h in code)
        assert eng.search("ownership", k=10, since=time.time() + 3600) == []


def test_second_engine_is_refused(backend: str, data_dir: Path) -> None:
    with ContextEngine.open(data_dir), pytest.raises(StoreLocked):
        ContextEngine.open(data_dir)


def test_other_model_is_refused(backend: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text="some text", title="t"))
    monkeypatch.setenv("CTX_EMBEDDER", "fake:128")
    with pytest.raises(ModelMismatch, match="fake-hash-384"):
        ContextEngine.open(data_dir)
