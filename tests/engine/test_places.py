"""Hits and payload items say where they are: the path under the ingested folder, the
folder, and the chunk's lines (issue 21), recorded at ingest in the chunk's meta."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from engine.facade import ContextEngine
from engine.ingest.chunking import chunk_document
from engine.ingest.config import ChunkingConfig
from engine.ingest.loaders import load_file
from engine.ingest.place import place_of, root_of, with_root
from engine.tokens import TokenCounter


def _project(root: Path) -> Path:
    """Code long enough for several chunks, and a markdown file, two folders down."""
    (root / "src" / "net").mkdir(parents=True)
    funcs = [f"def handler_{i}(request):\n    \"\"\"Handle request kind {i} of the ferry "
             f"booking service.\"\"\"\n    value = request.get('field_{i}')\n\n"
             f"    return value * {i}\n" for i in range(40)]
    (root / "src" / "net" / "server.py").write_text("import os\n\n\n" + "\n\n".join(funcs))
    sections = [f"## Part {i}\n\n" + " ".join(f"lighthouse{i} keeper word{j}." for j in range(60))
                + "\n" for i in range(8)]
    (root / "guide.md").write_text("# Guide\n\n" + "\n\n".join(sections))
    return root


@pytest.mark.parametrize("name", ["src/net/server.py", "guide.md"])
def test_each_chunk_knows_its_root_and_lines(tmp_path: Path, name: str) -> None:
    root = _project(tmp_path / "proj")
    path = root / name
    doc = with_root(load_file(path), root_of(path, [root]))
    chunks = chunk_document(doc, ChunkingConfig(), TokenCounter.shared())
    assert len(chunks) > 2
    lines = path.read_text().split("\n")
    for ch in chunks:
        assert ch.meta["root"] == str(root)
        first, last = ch.meta["lines"]
        span = "\n".join(lines[first - 1:last])
        assert ch.text in span  # the lines hold the chunk ...
        assert ch.text.split("\n")[0] in lines[first - 1]  # ... from its first line
        assert ch.text.split("\n")[-1] in lines[last - 1]  # ... to its last line


def test_the_root_is_the_deepest_folder_given_or_a_files_own() -> None:
    given = [Path("/w/proj"), Path("/w/proj/sub"), Path("/w/notes.md")]
    assert root_of(Path("/w/proj/sub/a.py"), given) == "/w/proj/sub"
    assert root_of(Path("/w/proj/b.py"), given) == "/w/proj"
    assert root_of(Path("/w/notes.md"), given) == "/w"


def test_place_of_a_chunk_stored_before_roots_were_recorded() -> None:
    assert place_of("/w/proj/a.py", "code", {}) == ("/w/proj/a.py", None, None)
    assert place_of("/w/proj/a.py", "code", {"root": "/w/proj", "lines": [3, 9]}) == (
        "a.py", "/w/proj", (3, 9))
    assert place_of("/elsewhere/a.py", "code", {"root": "/w/proj"}) == (
        "/elsewhere/a.py", "/w/proj", None)
    assert place_of("text:3f2a", "text", {"lines": [1, 2]}) == ("", None, None)


def test_search_and_build_name_path_root_and_lines(tmp_path: Path, engine: ContextEngine) -> None:
    root = _project(tmp_path / "proj")
    assert engine.wait(engine.ingest(paths=[str(root)])).state == "done"
    engine.wait(engine.ingest(text="a pasted note about ferry booking", title="note"))
    hits = engine.search("handler_7 ferry booking service request", k=10)
    code = [h for h in hits if h.source.endswith("server.py")]
    assert code and all(h.path == "src/net/server.py" and h.root == str(root) for h in code)
    lines = (root / "src" / "net" / "server.py").read_text().split("\n")
    for h in code:
        assert h.lines is not None and h.text in "\n".join(lines[h.lines[0] - 1:h.lines[1]])
    note = [h for h in engine.search("pasted note ferry booking", k=5, distinct_sources=True)
            if h.title == "note"]
    assert note and (note[0].path, note[0].root, note[0].lines) == ("", None, None)
    back = type(code[0]).from_dict(json.loads(json.dumps(code[0].to_dict())))
    assert back == code[0]  # lines survive the wire as a list and come back a tuple
    payload = engine.build_context("handler_7 ferry booking service request", budget=600)
    items = [i for i in payload.items if i.path == "src/net/server.py"]
    assert items and items[0].root == str(root) and items[0].lines is not None
    first, last = items[0].lines
    assert f"src/net/server.py:{first}-{last}" in payload.context
    item = dataclasses.replace(items[0])
    assert type(item).from_dict(json.loads(json.dumps(item.to_dict()))) == item
