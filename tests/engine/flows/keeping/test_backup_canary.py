"""No plaintext: a unique canary stored in the vault is in no byte of a backup file, of the
files a backup or a restore writes while it runs, of the restored store, nor anywhere
but the export the user asked for."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, JobChanged, restore_backup
from tests.conftest import TEST_PASSPHRASE


def _needles(canary: str) -> list[bytes]:
    return [canary.encode("utf-8"), canary.encode("utf-16-le"), canary.upper().encode("utf-8")]


def _holding(root: Path, canary: str, skip: tuple[Path, ...] = ()) -> list[str]:
    """The files under ``root`` (but ``skip``) in which the canary is."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not any(path == s or s in path.parents for s in skip):
            data = path.read_bytes()
            if any(n in data or n.lower() in data.lower() for n in _needles(canary)):
                found.append(str(path.relative_to(root)))
    return found


def test_the_canary_leaves_only_by_the_export(tmp_path: Path, data_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.md").write_text(f"# Private\n\nThe vault code word is {canary} today.\n" +
                                    "Filler about gardens and tomatoes. " * 400)
    out = tmp_path / "out"
    out.mkdir()
    seen_during: list[list[str]] = []
    eng = ContextEngine.open(data_dir)
    try:
        eng.wait(eng.ingest(paths=[str(docs)]))
        eng.ingest(text=f"a note repeating {canary}", title="note", wait=True)
        eng.ingest_conversation([{"speaker": "Ann", "text": f"say {canary} twice"}],
                                title="chat", wait=True)
        for i in range(200):  # enough pages that the backup is seen mid-way
            eng.ingest(text=f"padding note {i} about rivers and boats " * 30, title=f"p{i}",
                       wait=True)

        def look(event: Any) -> None:  # on the backup's own thread, as it writes
            if isinstance(event, JobChanged) and event.job.kind == "backup" \
                    and 0 < event.job.bytes < event.job.bytes_total:
                seen_during.append([p.name for p in out.iterdir()])
                assert _holding(out, canary) == []
        eng.subscribe(look)
        backup = eng.backup(str(out / "store.ctxbackup"))
        (tmp_path / "exports").mkdir()
        export = eng.export(str(tmp_path / "exports" / "export.jsonl"))
    finally:
        eng.close()
    assert any(any(n.endswith(".partial") for n in names) for names in seen_during), \
        "the backup was never seen while it wrote"
    assert _holding(out, canary) == []

    during_restore: list[str] = []

    def scan(done: int, total: int) -> None:
        during_restore.extend(_holding(tmp_path / "restored-parent", canary))
        during_restore.append("looked")
    (tmp_path / "restored-parent").mkdir()
    restore_backup(backup.path, tmp_path / "restored-parent" / "store",
                   passphrase=TEST_PASSPHRASE, progress=scan)
    assert during_restore and set(during_restore) == {"looked"}
    with ContextEngine.open(tmp_path / "restored-parent" / "store", create=False) as again:
        assert any(canary in h.text for h in again.search(canary, k=5))
    assert export.sources == 203
    skip = (docs, Path(export.path))
    assert _holding(tmp_path, canary, skip) == []  # data dirs, backup, temp files: none
    assert _holding(Path(export.path).parent, canary) == ["export.jsonl"]
