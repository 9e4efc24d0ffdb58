"""A session's transcript is one memory item, however many syncs stored it.

Each sync of a growing transcript stores what it added as a segment source
(``transcript:<path>#<offset>``), and the calls still waiting for their result as
``transcript:<path>#pending``. ``sources()`` lists the file once (its chunks summed,
``segments`` counting them), ``status()`` counts it once, and a delete that names any
one segment (its id or uri, as a recall hit shows them) deletes the whole session:
every segment, its pending calls, its parser state and what recall learned. Before,
each segment was listed and deleted alone, and a delete of one forgot the parser state
the rest needed: the call completed later was stored without its name and input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.facade import ContextEngine
from tests.conftest import shared_data
from tests.engine.recall.recall_helpers import ClaudeLines, text, tool_use, write_lines

REAL = "marot__spotter__short.jsonl"  # a small real Claude Code session
REQUEST = "audit the monorepo for secrets and key files"
COMMAND = "git ls-files | grep -E env"


def _segments(engine: ContextEngine, path: Path) -> dict[int, tuple[str, int]]:
    """The file's segment sources in the vault: id -> (uri, chunks)."""
    prefix = f"transcript:{path}#"
    return {int(sid): (str(uri), int(n)) for sid, uri, n in engine.rt.vault._query(
        "SELECT id, uri, n_chunks FROM sources WHERE substr(uri, 1, ?) = ?",
        (len(prefix), prefix))}


def _texts(engine: ContextEngine) -> list[str]:
    vault = engine.rt.vault
    return [r.text for r in vault.chunks(vault.chunk_ids()).values()]


def _in_thirds(source: Path, folder: Path, engine: ContextEngine) -> Path:
    """The real session synced as it grew: a third, two thirds, all of it."""
    lines = source.read_bytes().splitlines(keepends=True)
    path = folder / source.name
    for end in (len(lines) // 3, 2 * len(lines) // 3, len(lines)):
        path.write_bytes(b"".join(lines[:end]))
        engine.sync([str(folder)])
    return path


def pending_session(folder: Path, name: str = "s.jsonl") -> tuple[Path, ClaudeLines]:
    """A session that ends with a call still waiting for its result."""
    claude = ClaudeLines(cwd="/home/u/src/monorepo")
    path = write_lines(folder / name, [
        claude.user(REQUEST),
        claude.assistant([text("I will look for env files first.")], msg_id="m1"),
        claude.assistant([tool_use("t1", "Bash", {"command": "find . -name '.env*'"})],
                         msg_id="m1"),
        claude.tool_result("t1", "./apps/app/.env\n./apps/app/.env.example"),
        claude.assistant([tool_use("t2", "Bash", {"command": COMMAND})], msg_id="m2"),
    ])
    return path, claude


def _grown(engine: ContextEngine, folder: Path, name: str = "s.jsonl"
           ) -> tuple[Path, ClaudeLines]:
    """The pending session synced, then grown with a call answered while t2 still
    waits: two segments and the pending calls' source."""
    path, claude = pending_session(folder, name)
    engine.sync([str(folder)])
    with path.open("a", encoding="utf-8") as fh:
        fh.write(claude.assistant([tool_use("t3", "Bash", {"command": "git status"})],
                                  msg_id="m2") + "\n")
        fh.write(claude.tool_result("t3", " M README.md") + "\n")
    engine.sync([str(folder)])
    uris = sorted(u for u, _ in _segments(engine, path).values())
    assert len(uris) == 3 and uris[-1].endswith("#pending")
    return path, claude


def test_a_real_session_synced_in_three_parts_is_listed_once(engine: ContextEngine,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = _in_thirds(shared_data("transcripts", "claude", REAL), folder, engine)
    segments = _segments(engine, path)
    assert len(segments) >= 2  # the store keeps it in parts
    listed = engine.sources()
    assert [s.uri for s in listed] == [f"transcript:{path}"]
    [one] = listed
    assert one.kind == "transcript" and one.segments == len(segments)
    assert one.n_chunks == sum(n for _, n in segments.values()) == len(_texts(engine))
    assert one.id == min(segments)
    status = engine.status()
    assert status.sources == 1 and status.chunks == one.n_chunks
    assert engine.sources(project=one.project) == listed
    backup = engine.backup(str(tmp_path / "b.ctxbak"))  # a backup says the same count
    assert (backup.sources, backup.chunks) == (1, one.n_chunks)
    assert engine.verify_backup(backup.path).sources == 1


def test_documents_and_sessions_are_counted_alike(engine: ContextEngine,
                                                  tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    _grown(engine, folder)
    engine.ingest(text="the staging database is rebuilt every night", wait=True)
    listed = engine.sources()
    assert sorted(s.kind for s in listed) == ["text", "transcript"]
    assert [s.segments for s in listed if s.kind == "text"] == [1]
    assert engine.status().sources == len(listed) == 2


def test_an_export_holds_a_session_as_one_source(engine: ContextEngine,
                                                 tmp_path: Path) -> None:
    """jsonl: the session's segments on consecutive lines, counted as one source, and an
    import stores them as they were; markdown: one file for the session, every
    segment's text in it (before: a file per segment, each counted a source)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, _ = _grown(engine, folder)
    engine.ingest(text="the staging database is rebuilt every night", wait=True)
    segments = _segments(engine, path)
    listed = engine.sources()
    out = tmp_path / "out"
    out.mkdir()
    jsonl = engine.export(str(out / "all.jsonl"))
    md = engine.export(str(out / "md"), fmt="markdown")
    assert jsonl.sources == md.sources == md.files == len(listed) == 2
    assert jsonl.chunks == md.chunks == sum(s.n_chunks for s in listed)
    lines = (out / "all.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    uris = [json.loads(line)["uri"] for line in lines]
    assert sorted(uris[:3]) == sorted(u for u, _ in segments.values())  # together, first
    [session] = (out / "md" / "transcript").glob("*.md")
    body = session.read_text(encoding="utf-8")
    assert f'uri: "transcript:{path}"' in body and "segments: 3" in body
    assert REQUEST in body and "git status" in body and COMMAND in body
    with ContextEngine.open(tmp_path / "fresh") as fresh:
        job = fresh.wait(fresh.ingest(paths=[str(out / "all.jsonl")]))
        assert job.state == "done"
        assert [(s.uri, s.segments, s.n_chunks) for s in fresh.sources()] == \
            [(s.uri, s.segments, s.n_chunks) for s in listed]


def test_a_markdown_export_names_a_session_of_one_sync_as_listed(engine: ContextEngine,
                                                                 tmp_path: Path) -> None:
    """A session one sync stored (one segment, under a folder with a '#' in its name):
    its file's front matter says what ``sources()`` lists, the file's uri and
    ``segments: 1`` (before: the segment's uri, "...#0", and no segments)."""
    folder = tmp_path / "a#b"
    folder.mkdir()
    path, _ = pending_session(folder)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(ClaudeLines().tool_result("t2", " M README.md") + "\n")
    engine.sync([str(folder)])
    assert len(_segments(engine, path)) == 1
    [listed] = engine.sources()
    out = tmp_path / "md"
    assert engine.export(str(out), fmt="markdown").sources == 1
    [session] = (out / "transcript").glob("*.md")
    front = session.read_text(encoding="utf-8").split("---\n")[1]
    assert f"uri: {json.dumps(listed.uri)}\n" in front and listed.uri == f"transcript:{path}"
    assert "segments: 1\n" in front and f"title: {json.dumps(listed.title)}\n" in front


def test_deleting_a_recall_hits_segment_deletes_the_whole_session(engine: ContextEngine,
                                                                  tmp_path: Path) -> None:
    """A hit names its segment (the pending calls' source here): deleting it by that uri
    deletes every segment, and the file's parser state with them."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, claude = _grown(engine, folder)
    site = ClaudeLines(cwd="/home/u/src/site")
    other = write_lines(folder / "other.jsonl", [
        site.user("rename the blog's draft folder"),
        site.assistant([text("Renamed drafts/ to unpublished/.")], msg_id="o1")])
    engine.sync([str(folder)])
    hit = next(h for h in engine.recall(COMMAND, k=10).hits or () if COMMAND in h.text)
    assert hit.source == f"transcript:{path}#pending"
    ids = set(_segments(engine, path))
    result = engine.delete(hit.source, wait=True)
    assert set(result.sources) == ids and result.deleted == 1
    assert _segments(engine, path) == {}
    assert not any(REQUEST in t for t in _texts(engine))
    assert [s.uri for s in engine.sources()] == [f"transcript:{other}"]  # the other stays
    with path.open("a", encoding="utf-8") as fh:  # the waiting call's result comes later
        fh.write(claude.tool_result("t2", "apps/app/.env.example") + "\n")
    engine.sync([str(folder)])
    assert not any(REQUEST in t or "find . -name" in t for t in _texts(engine))


@pytest.mark.parametrize("name", ["s.jsonl", "fix#12.jsonl"])  # a '#' in the path too
def test_deleting_a_segment_by_id_deletes_the_whole_session(engine: ContextEngine,
                                                            tmp_path: Path, name: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, _ = _grown(engine, folder, name)
    assert [s.uri for s in engine.sources()] == [f"transcript:{path}"]
    assert engine.status().sources == 1
    ids = sorted(_segments(engine, path))
    result = engine.delete(ids[1], wait=True)  # the second segment, alone before
    assert sorted(result.sources) == ids and result.deleted == 1
    assert _segments(engine, path) == {} and engine.sources() == []
    assert engine.status().sources == 0 and engine.status().chunks == 0


def test_deleting_any_segment_refits_recall_without_the_session(data_dir: Path,
                                                                  tmp_path: Path) -> None:
    """What recall learned goes with the session: the fit after the delete of one
    segment has the whole session out (before, the rest of it stayed in)."""
    from tests.engine.flows.recall.test_recall_adapt import (
        FIT,
        adapt_of,
        synced,
        write_sessions,
    )

    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(FIT, encoding="utf-8")
    folder = tmp_path / "sessions"
    write_sessions(folder, 12)
    with ContextEngine.open(data_dir) as eng:
        path, _ = _grown(eng, folder)
        synced(eng, folder)
        before = adapt_of(eng).sessions
        first = min(_segments(eng, path))
        uri, _ = _segments(eng, path)[first]
        eng.delete(uri, wait=True)
        assert _segments(eng, path) == {}
        assert eng._recall.adapt_job
        assert eng.wait(eng._recall.adapt_job, timeout=60).state == "done"
        assert adapt_of(eng).sessions == before - 1


def test_a_session_delete_counts_one_source_done(engine: ContextEngine,
                                                 tmp_path: Path) -> None:
    """The delete job's progress counts what ``sources()`` lists: a folder holding a
    session of three parts and a note is 2 sources to remove, not 4."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    _grown(engine, folder)
    note = folder / "notes.md"
    note.write_text("# Notes\n\nThe env files stay out of git.\n", encoding="utf-8")
    engine.ingest(paths=[str(note)], wait=True)
    assert len(engine.sources()) == 2
    result = engine.delete(str(folder), wait=True)
    job = engine.job(result.job)
    assert result.deleted == 2 and len(result.sources) == 4
    assert (job.files_total, job.files_done) == (2, 2)
    assert engine.sources() == []


@pytest.mark.parametrize("by", ["id", "uri", "path", "file uri"])
def test_a_session_whose_name_begins_another_s_is_deleted_alone(
        engine: ContextEngine, tmp_path: Path, by: str) -> None:
    """``s.jsonl`` and ``s.jsonl#2.jsonl`` side by side: the second's segment uris begin
    with the first's segment prefix (``transcript:<path>/s.jsonl#``). Deleting the first
    session, however named, deleted the second's segments too."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, _ = pending_session(folder, "s.jsonl")
    other, _ = pending_session(folder, "s.jsonl#2.jsonl")
    engine.sync([str(folder)])
    mine = {sid for sid, (uri, _) in _segments(engine, path).items()
            if uri.startswith(f"transcript:{path}#") and "#2.jsonl" not in uri}
    theirs = set(_segments(engine, other))
    assert mine and theirs and not mine & theirs
    assert sorted(s.uri for s in engine.sources()) == [f"transcript:{path}",
                                                       f"transcript:{other}"]
    assert engine.status().sources == 2
    names: dict[str, str | int] = {"id": min(mine), "uri": _segments(engine, path)[min(mine)][0],
                                   "path": str(path), "file uri": f"transcript:{path}"}
    name = names[by]
    result = engine.delete(name, wait=True)
    assert sorted(result.sources) == sorted(mine) and result.deleted == 1
    assert [s.uri for s in engine.sources()] == [f"transcript:{other}"]
    assert set(_segments(engine, other)) == theirs
