"""Bad input loses nothing: odd file names, FIFOs and sockets, Latin-1 text (issue 10)."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from engine.api import FileIssue, JobSnapshot
from engine.errors import REJECT_SPECIAL
from engine.facade import ContextEngine

REPO = Path(__file__).resolve().parents[3]
LATIN1_NAME = os.fsdecode(b"caf\xe9.txt")  # a file name that is not valid UTF-8


def _wire_safe(snap: JobSnapshot) -> None:
    """A job snapshot must survive JSON and UTF-8 (the wire, a terminal, the vault)."""
    json.dumps(snap.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_non_utf8_name_in_a_folder_is_ingested_with_the_rest(engine: ContextEngine,
                                                               tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.md").write_text("hi\n")
    (d / LATIN1_NAME).write_text("x marks the spot\n")
    snap = engine.wait(engine.ingest(paths=[str(d)]), timeout=60)
    _wire_safe(snap)
    assert snap.state == "done" and snap.errors == (), snap
    uris = sorted(s.uri for s in engine.sources())
    assert uris == [str(d / "a.md"), str(d) + "/caf\\xe9.txt"]
    titles = {s.title for s in engine.sources()}
    assert "caf\\xe9.txt" in titles
    assert [h.source for h in engine.search("spot", k=1)] == [str(d) + "/caf\\xe9.txt"]
    # Unchanged on a second run; deletable by its real path and by the shown one.
    again = engine.wait(engine.ingest(paths=[str(d)]), timeout=60)
    assert again.files_unchanged == 2
    assert engine.delete(str(d / LATIN1_NAME)).deleted == 1
    assert [s.uri for s in engine.sources()] == [str(d / "a.md")]
    engine.wait(engine.ingest(paths=[str(d / LATIN1_NAME)]), timeout=60)  # named directly
    assert engine.delete(str(d) + "/caf\\xe9.txt").deleted == 1


def test_an_unreadable_non_utf8_name_is_reported_with_escapes(engine: ContextEngine,
                                                              tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.md").write_text("hi\n")
    (d / LATIN1_NAME).write_bytes(b"")  # empty: rejected, and the report names it
    snap = engine.wait(engine.ingest(paths=[str(d)]), timeout=60)
    _wire_safe(snap)
    assert snap.state == "done" and len(engine.sources()) == 1
    assert snap.skipped == (FileIssue(str(d) + "/caf\\xe9.txt", "empty"),)
    assert snap.errors == ()  # a skip, not a failure


def test_fifo_and_socket_in_a_folder_are_reported_not_opened(engine: ContextEngine,
                                                             tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.md").write_text("# A\n\nSome words.\n")
    os.mkfifo(d / "pipe.txt")
    sock_path = d / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        snap = engine.wait(engine.ingest(paths=[str(d)]), timeout=60)
        named = engine.wait(engine.ingest(paths=[str(d / "pipe.txt")]), timeout=60)
    finally:
        sock.close()
    assert snap.state == "done" and snap.files_skipped == 2
    assert sorted(snap.skipped, key=lambda e: e.path) == [
        FileIssue(str(d / "pipe.txt"), REJECT_SPECIAL), FileIssue(str(sock_path), REJECT_SPECIAL)]
    assert named.skipped == (FileIssue(str(d / "pipe.txt"), REJECT_SPECIAL),)
    assert snap.errors == named.errors == ()
    assert [s.uri for s in engine.sources()] == [str(d / "a.md")]


def test_latin1_file_is_decoded_and_searchable(engine: ContextEngine, tmp_path: Path) -> None:
    path = tmp_path / "recette.txt"
    path.write_bytes("Crème brûlée: chauffer la crème à 80 °C.\n".encode("latin-1"))
    snap = engine.wait(engine.ingest(paths=[str(path)]), timeout=60)
    assert snap.state == "done" and snap.errors == ()
    hit = engine.search("brûlée", k=1)[0]
    assert "Crème brûlée" in hit.text


@pytest.mark.slow
def test_cli_reproduction_from_the_issue(tmp_path: Path) -> None:
    """`mkdir d; echo hi > d/a.md; echo x > d/caf\\xe9.txt; ctx ingest d`."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.md").write_text("hi\n")
    (d / LATIN1_NAME).write_text("x\n")
    try:
        r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "ingest", str(d), "--json"],
                           capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        job = json.loads(r.stdout)["jobs"][0]
        assert job["state"] == "done" and job["files_done"] == 2 and job["errors"] == []
        r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "sources", "--json"],
                           capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                           env=dict(os.environ))
        titles = sorted(s["title"] for s in json.loads(r.stdout)["sources"])
        assert titles == ["a.md", "caf\\xe9.txt"]
    finally:  # the CLI started a background engine for this store: stop it
        from ipc.remote import connect

        remote = connect()
        if remote is not None:
            remote.shutdown()
            remote.close()


def test_docx_zip_bomb_is_refused_before_inflating(engine: ContextEngine, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.errors import REJECT_UNPACKED_TOO_LARGE
    from tests.engine.ingest.zipbomb import make_docx_bomb

    bomb = make_docx_bomb(tmp_path / "bomb.docx", 256 * 1024 * 1024)  # 256 MiB from ~250 KB
    fine = make_docx_bomb(tmp_path / "fine.docx", 0, text="An honest little document.")
    assert bomb.stat().st_size < 1024 * 1024
    inflated: list[str] = []
    real_read = zipfile.ZipFile.read

    def spy(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, pwd: bytes | None = None) -> bytes:
        inflated.append(str(getattr(name, "filename", name)))
        return real_read(self, name, pwd)

    monkeypatch.setattr(zipfile.ZipFile, "read", spy)
    snap = engine.wait(engine.ingest(paths=[str(bomb), str(fine)]), timeout=120)
    assert snap.state == "done"
    assert snap.skipped == (FileIssue(str(bomb), REJECT_UNPACKED_TOO_LARGE),)
    assert [s.uri for s in engine.sources()] == [str(fine)]
    assert inflated and all(Path(str(bomb)).name not in n for n in inflated)
    assert "word/document.xml" in inflated  # only the honest file's parts were read
    assert inflated.count("word/document.xml") == 1


def test_zip_limits_by_ratio_and_total(tmp_path: Path) -> None:
    from engine.ingest import formats as fm

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.xml", b"<a/>" * (1 << 20))  # 4 MiB of one pattern: ratio ~1000
    with pytest.raises(fm.UnpackedTooLarge):
        fm.check_zip(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:  # stored: ratio 1, but big
        for i in range(5):
            zf.writestr(f"m{i}.bin", os.urandom(fm.ZIP_MAX_UNPACKED // 4))
    with pytest.raises(fm.UnpackedTooLarge):
        fm.check_zip(buf.getvalue())
    with pytest.raises(fm.FormatError):
        fm.check_zip(b"PK\x03\x04 not really a zip")
