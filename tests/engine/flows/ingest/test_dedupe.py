"""Identical content under several paths is embedded and stored once (issue 10).

The other paths point at the stored source; deleting one path keeps the others,
and changing one file gives it its own source without touching its twins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.embedding.fake import FakeEmbedder
from engine.facade import ContextEngine

X = "# Tides\n\nSpring tides come twice a month, at new and full moon.\n\n" + \
    "Neap tides fall between them, when the pull of sun and moon is at right angles.\n"
Y = "# Ropes\n\nA bowline makes a fixed loop at the end of a line.\n"


def _state(eng: ContextEngine) -> dict[str, Any]:
    vault = eng.rt.vault
    return {
        "sources": sorted(s.uri for s in eng.sources()),
        "chunks": vault._query("SELECT count(*) FROM chunks")[0][0],
        "vectors": eng.rt.vectors.count(),
        "aliases": sorted(r[0] for r in vault._query("SELECT uri FROM source_aliases")),
    }


def _where(eng: ContextEngine, query: str) -> list[str]:
    """Sources of the hits that hold the query's first word."""
    word = query.split()[0].lower()
    return sorted({h.source for h in eng.search(query, k=5) if word in h.text.lower()})


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tmp_path = tmp_path / "tree"
    for sub, name, text in (("a", "x.md", X), ("b", "x.md", X), ("b", "copy.md", X),
                            ("c", "y.md", Y)):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
        (tmp_path / sub / name).write_text(text)
    return tmp_path


def test_copies_in_one_job_are_embedded_and_stored_once(data_dir: Path, tree: Path) -> None:
    emb = FakeEmbedder()
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        snap = eng.wait(eng.ingest(paths=[str(tree)]), timeout=60)
        assert snap.state == "done" and snap.files_done == 4 and snap.errors == ()
        x_chunks = eng.rt.vault._query("SELECT n_chunks FROM sources WHERE uri = ?",
                                      (str(tree / "a" / "x.md"),))[0][0]
        y_chunks = eng.rt.vault._query("SELECT n_chunks FROM sources WHERE uri = ?",
                                      (str(tree / "c" / "y.md"),))[0][0]
        state = _state(eng)
        assert state["sources"] == [str(tree / "a" / "x.md"), str(tree / "c" / "y.md")]
        assert state["aliases"] == [str(tree / "b" / "copy.md"), str(tree / "b" / "x.md")]
        assert state["chunks"] == state["vectors"] == x_chunks + y_chunks
        assert emb.texts_embedded == x_chunks + y_chunks
        again = eng.wait(eng.ingest(paths=[str(tree)]), timeout=60)
        assert again.files_unchanged == 4 and emb.texts_embedded == x_chunks + y_chunks


def test_a_copy_found_in_a_later_job_points_at_the_stored_source(data_dir: Path,
                                                                 tree: Path) -> None:
    emb = FakeEmbedder()
    with ContextEngine.open(data_dir, embedder=emb) as eng:
        eng.wait(eng.ingest(paths=[str(tree / "a")]), timeout=60)
        before = (_state(eng), emb.texts_embedded)
        snap = eng.wait(eng.ingest(paths=[str(tree / "b" / "x.md")]), timeout=60)
        assert snap.state == "done" and snap.files_done == 1
        after = _state(eng)
        assert emb.texts_embedded == before[1]
        assert after["chunks"] == before[0]["chunks"] and after["vectors"] == before[0]["vectors"]
        assert after["aliases"] == [str(tree / "b" / "x.md")]


def test_deleting_one_path_keeps_the_others(engine: ContextEngine, tree: Path) -> None:
    engine.wait(engine.ingest(paths=[str(tree)]), timeout=60)
    x_chunks = _state(engine)["chunks"]
    # The path that holds the source: the source moves to one of its copies.
    assert engine.delete(str(tree / "a" / "x.md")).deleted == 1
    state = _state(engine)
    assert state["chunks"] == x_chunks and state["vectors"] == x_chunks
    assert str(tree / "a" / "x.md") not in state["sources"] + state["aliases"]
    assert _where(engine, "neap tides") in ([str(tree / "b" / "x.md")],
                                            [str(tree / "b" / "copy.md")])
    # An alias path: just that path goes.
    assert engine.delete(str(tree / "b" / "copy.md")).deleted == 1
    assert _state(engine)["chunks"] == x_chunks
    # The last path takes the content with it.
    engine.delete(str(tree / "b" / "x.md"))
    state = _state(engine)
    assert state["sources"] == [str(tree / "c" / "y.md")] and state["aliases"] == []
    assert _where(engine, "neap tides") == []
    assert state["chunks"] == state["vectors"]


def test_deleting_a_folder_hands_sources_to_paths_outside_it(engine: ContextEngine,
                                                             tree: Path) -> None:
    engine.wait(engine.ingest(paths=[str(tree)]), timeout=60)
    engine.delete(str(tree / "a"))
    engine.delete(str(tree / "b"))  # the source (moved into b/ by the first delete) goes
    state = _state(engine)
    assert state["sources"] == [str(tree / "c" / "y.md")] and state["aliases"] == []
    assert state["chunks"] == state["vectors"]


def test_changing_one_copy_leaves_the_others(engine: ContextEngine, tree: Path) -> None:
    engine.wait(engine.ingest(paths=[str(tree)]), timeout=60)
    # The primary changes: it gets a new source, the copies keep the old text.
    (tree / "a" / "x.md").write_text("# Tides\n\nRewritten: king tides flood the quay.\n")
    snap = engine.wait(engine.ingest(paths=[str(tree)]), timeout=60)
    assert snap.files_unchanged == 3
    assert _where(engine, "king tides flood the quay")[0] == str(tree / "a" / "x.md")
    assert str(tree / "b" / "copy.md") in _where(engine, "neap tides") or \
        str(tree / "b" / "x.md") in _where(engine, "neap tides")
    # A copy changes: it gets its own source and stops being an alias.
    (tree / "b" / "copy.md").write_text("# Copy\n\nNow about anchors and chains.\n")
    engine.wait(engine.ingest(paths=[str(tree / "b" / "copy.md")]), timeout=60)
    state = _state(engine)
    assert str(tree / "b" / "copy.md") in state["sources"]
    assert str(tree / "b" / "copy.md") not in state["aliases"]
    assert state["chunks"] == state["vectors"]
    assert engine.wait(engine.ingest(paths=[str(tree)]), timeout=60).files_unchanged == 4
