"""Bad transcript input: a corrupt or cut line is skipped and counted, never a stopped
sync; a session whose file is gone keeps its memory until the user deletes it in ctx."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine.facade import ContextEngine
from tests.agents.engines import ctx
from tests.conftest import shared_data

LARGE = "obra__episodic-memory__large-conversation.jsonl"
SHORT = "marot__spotter__short.jsonl"
SHORT_SESSION = "55604662-cf2a-4331-851a-ec234028f8ca"


def _copy(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in names:
        shutil.copyfile(shared_data("transcripts", "claude", name), folder / name)
    return folder


def _spoil(path: Path) -> tuple[int, str]:
    """Three bad lines in the middle of ``path``: one cut mid-record, one that is not
    JSON, one nested past Python's recursion limit. Returns how many, and the text of
    the file's last answer (after them)."""
    lines = path.read_bytes().split(b"\n")
    middle = len(lines) // 2
    cut = lines[middle][: len(lines[middle]) // 2]
    spoiled = [*lines[:middle], cut, b"\x00\xff not json at all", b"[" * 200_000,
               *lines[middle + 1:]]
    path.write_bytes(b"\n".join(spoiled))
    last = next(json.loads(ln) for ln in reversed(lines) if b'"type":"assistant"' in ln
                and b'"type":"text"' in ln)
    return 3, next(b["text"] for b in last["message"]["content"] if b["type"] == "text")


def _holding(engine: ContextEngine, words: str) -> int:
    vault = engine.rt.vault
    return sum(words in " ".join(r.text.split())
               for r in vault.chunks(vault.chunk_ids()).values())


def test_corrupt_lines_are_skipped_and_counted(engine: ContextEngine, tmp_path: Path) -> None:
    folder = _copy(tmp_path, LARGE, SHORT)
    bad, last = _spoil(folder / LARGE)
    res = engine.sync([str(folder)])
    assert res.bad_lines == bad and not res.errors and res.full == 2
    assert _holding(engine, " ".join(last.split()[:10])) >= 1  # the lines after them count
    again = engine.sync([str(folder)])
    assert again.unchanged == 2 and again.bad_lines == 0  # counted once, not on every sync


def test_cli_sync_summary_says_how_many_lines_were_skipped(tmp_path: Path) -> None:
    folder = _copy(tmp_path, LARGE)
    bad, _ = _spoil(folder / LARGE)
    r = ctx("--local", "recall", "--index", str(folder))
    assert r.returncode == 0, r.stderr
    assert f"{bad} unreadable lines skipped" in r.stderr


def test_vanished_session_file_keeps_its_memory(engine: ContextEngine, tmp_path: Path) -> None:
    folder = _copy(tmp_path, SHORT, LARGE)
    engine.sync([str(folder)])

    def found() -> bool:
        hits = engine.recall("mix phx.server doesnt seem to start", k=10).hits
        assert hits is not None
        return any(h.meta.get("session") == SHORT_SESSION for h in hits)

    assert found()
    chunks = engine.status().chunks
    (folder / SHORT).unlink()  # the agent removes transcripts after 30 days
    with (folder / LARGE).open("a", encoding="utf-8") as fh:  # and a later sync does work
        line = next(ln for ln in (folder / LARGE).read_text(encoding="utf-8").splitlines()
                    if '"type":"user"' in ln)
        fh.write(line.replace('"uuid":"', '"uuid":"later', 1) + "\n")
    later = engine.sync([str(folder)])
    assert later.files == 1 and later.appended == 1 and not later.errors
    assert engine.status().chunks >= chunks
    assert found()  # still recalled, with its file gone

    engine.delete(str(folder / SHORT))  # until the user deletes it in ctx
    assert not found()
    assert engine.sync([str(folder)]).chunks == 0 and not found()
