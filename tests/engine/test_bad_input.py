"""Bad files are reported by path and reason and skipped; nothing stored before is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.config import Config
from engine.facade import ContextEngine


def test_bad_files_are_skipped_with_reasons(tmp_path: Path, data_dir: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "keep.md").write_text("# Keep\n\nA paragraph about lighthouses and ships.\n")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00\xff" * 20)
    (bad / "empty.md").write_text("   \n\n")
    (bad / "huge.txt").write_text("x" * 5000)
    (bad / "broken.json").write_text('{"a": [1, 2')
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (bad / "fine.txt").write_text("lighthouse keepers log the weather")
    locked = bad / "locked.txt"
    locked.write_text("no access")
    os.chmod(locked, 0)
    cfg = Config().with_overrides({"ingest": {"max_file_bytes": 4000},
                                   "embedding": {"model": "fake"},
                                   "keys": {"scrypt_n": 1024}})
    with ContextEngine.open(data_dir, config=cfg) as eng:
        first = eng.wait(eng.ingest(paths=[str(good)]))
        assert first.state == "done" and first.chunks >= 1
        before = eng.status().chunks
        job = eng.wait(eng.ingest(paths=[str(bad)]))
        assert job.state == "done"
        reasons = {Path(e.path).name: e.reason for e in job.errors + job.skipped}
        assert {Path(e.path).name for e in job.errors} <= {"broken.json", "broken.pdf",
                                                           "locked.txt"}
        expected = {"binary.txt": "binary", "empty.md": "empty", "huge.txt": "too_large",
                    "broken.json": "malformed", "broken.pdf": "malformed"}
        if os.geteuid() != 0:  # root reads anything
            expected["locked.txt"] = "unreadable"
        for name, reason in expected.items():
            assert reasons.get(name) == reason, (name, reasons)
        assert "fine.txt" not in reasons
        readable_extra = 1 if os.geteuid() == 0 else 0  # root can read locked.txt
        assert eng.status().chunks == before + 1 + readable_extra
        assert eng.search("lighthouses ships", k=3)[0].source.endswith("keep.md")
    os.chmod(locked, 0o600)


@pytest.mark.parametrize("query", ["", "   ", "\ud800"])
def test_bad_queries(engine: ContextEngine, query: str) -> None:
    from engine.errors import InvalidInput

    with pytest.raises(InvalidInput):
        engine.search(query)
