"""`ctx export`: the sources as plaintext files, only after a clear warning; `ctx ingest` of a
jsonl export stores the same sources again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, InvalidInput
from tests.conftest import TEST_PASSPHRASE
from tests.engine.flows.keeping.stores import ctx, fill, fresh_env


def _sources(eng: ContextEngine) -> list[tuple[Any, ...]]:
    return sorted((s.uri, s.kind, s.title, s.fmt, s.project, s.created_at, s.content_hash,
                   s.n_chunks, s.tokens) for s in eng.sources())


def _chunks(eng: ContextEngine) -> list[tuple[Any, ...]]:
    rows = eng.rt.vault._query(
        "SELECT s.uri, c.ordinal, c.kind, c.heading, c.text, c.tokens, c.start, c.time, c.meta "
        "FROM chunks c JOIN sources s ON s.id = c.source_id ORDER BY s.uri, c.ordinal")
    return [tuple(r) for r in rows]


def _surrogates(eng: ContextEngine) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in eng.rt.vault._query(
        "SELECT s.uri, g.full, g.gist, g.micro FROM surrogates g JOIN sources s "
        "ON s.id = g.source_id ORDER BY s.uri")]


@pytest.fixture
def store(tmp_path: Path, data_dir: Path) -> Path:
    with ContextEngine.open(data_dir) as eng:
        fill(eng, tmp_path, docs=6)
        eng.ingest(text="A plain note: buy rope.\n\nAnd a second paragraph.", title="note",
                   wait=True)
    return data_dir


def test_jsonl_export_ingests_back_as_the_same_sources(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with ContextEngine.open(store, create=False) as eng:
        result = eng.export(str(out / "all.jsonl"))
        before = (_sources(eng), _chunks(eng), _surrogates(eng))
    lines = (out / "all.jsonl").read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    assert head["ctx_export"] == 1 and result.sources == len(lines) - 1 == len(before[0])
    recs = [json.loads(line) for line in lines[1:]]
    kinds = {r["kind"] for r in recs}
    assert {"document", "conversation", "transcript", "text"} <= kinds
    note = next(r for r in recs if r["title"] == "note")
    assert note["text"] == "A plain note: buy rope.\n\nAnd a second paragraph."
    doc = next(r for r in recs if r["kind"] == "document")
    assert doc["text"].startswith("# doc 0") and all(c["text"] in doc["text"]
                                                     for c in doc["chunks"])
    assert (out / "all.jsonl").stat().st_mode & 0o077 == 0

    fresh = tmp_path / "fresh"
    with ContextEngine.open(fresh) as eng:
        job = eng.wait(eng.ingest(paths=[str(out / "all.jsonl")]))
        assert job.state == "done" and job.files_done == len(recs)
        assert (_sources(eng), _chunks(eng), _surrogates(eng)) == before
        again = eng.wait(eng.ingest(paths=[str(out / "all.jsonl")]))
        assert again.files_unchanged == len(recs) and not again.sources
        assert any("rope" in h.text for h in eng.search("buy rope", k=3))


def test_filters_and_markdown(store: Path, tmp_path: Path) -> None:
    with ContextEngine.open(store, create=False) as eng:
        chats = eng.export(str(tmp_path / "chats.jsonl"), kind="conversation")
        project = next(s.project for s in eng.sources() if s.project)
        coded = eng.export(str(tmp_path / "project.jsonl"), project=project)
        md = eng.export(str(tmp_path / "md"), fmt="markdown")
        with pytest.raises(InvalidInput, match="never writes over"):
            eng.export(str(tmp_path / "chats.jsonl"))
        with pytest.raises(InvalidInput, match="not an empty folder"):
            eng.export(str(tmp_path / "md"), fmt="markdown")
        with pytest.raises(InvalidInput, match="inside the data dir"):
            eng.export(str(store / "leak.jsonl"))
        with pytest.raises(InvalidInput, match="kind must be one of"):
            eng.export(str(tmp_path / "x.jsonl"), kind="novel")
        total = len(eng.sources())
    recs = [json.loads(x) for x in (tmp_path / "chats.jsonl").read_text().splitlines()[1:]]
    assert chats.sources == 2 and {r["kind"] for r in recs} == {"conversation"}
    recs = [json.loads(x) for x in (tmp_path / "project.jsonl").read_text().splitlines()[1:]]
    assert coded.sources >= 1 and {r["project"] for r in recs} == {project}
    files = sorted(p.relative_to(tmp_path / "md") for p in (tmp_path / "md").rglob("*.md"))
    assert md.files == md.sources == total == len(files)
    chat = (tmp_path / "md" / "conversation" / "Boat-chat.md").read_text()
    assert chat.startswith("---\ntitle: \"Boat chat\"\n") and "Maya" in chat


def test_cli_warns_and_needs_a_yes_without_a_terminal(store: Path, tmp_path: Path) -> None:
    env = fresh_env(tmp_path / "home", CTX_PASSPHRASE=TEST_PASSPHRASE)
    env["CTX_HOME"] = str(store)
    dest = tmp_path / "cli.jsonl"
    done = ctx(["--local", "export", str(dest)], env)
    assert done.returncode == 2 and "PLAINTEXT" in done.stderr and "--yes" in done.stderr
    assert not dest.exists()
    done = ctx(["--local", "export", str(dest), "--yes", "--json"], env)
    assert done.returncode == 0, done.stderr
    assert "PLAINTEXT" in done.stderr and json.loads(done.stdout)["path"] == str(dest)
    fresh = fresh_env(tmp_path / "home2", CTX_PASSPHRASE=TEST_PASSPHRASE)
    assert ctx(["init", "--no-keychain"], fresh).returncode == 0
    done = ctx(["--local", "ingest", str(dest), "--json"], fresh)
    assert done.returncode == 0, done.stderr
    with ContextEngine.open(store, create=False) as a, \
            ContextEngine.open(Path(fresh["CTX_HOME"]), create=False) as b:
        assert _sources(a) == _sources(b)
