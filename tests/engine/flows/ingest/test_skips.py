"""Skips are not failures (issue 21): a file left out on purpose is a reported skip with
its reason and raises no alert; a real failure alerts until its cause clears."""

from __future__ import annotations

import base64
import random
from pathlib import Path

from engine.api import FileIssue
from engine.facade import ContextEngine
from engine.metrics import ALERT_INGEST_FAILED

PNG = b"\x89PNG\r\n\x1a\n" + bytes(random.Random(1).randbytes(300))


def _pem() -> str:
    raw = base64.b64encode(random.Random(2).randbytes(4000)).decode()
    body = "\n".join(raw[i:i + 64] for i in range(0, len(raw), 64))
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"


def _package(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "py.typed").write_text("")
    (pkg / "logo.png").write_bytes(PNG)
    (pkg / "cacert.pem").write_text(_pem())
    (pkg / "core.py").write_text('"""Tide tables."""\n\ndef high_tide(port):\n    return port\n')
    return pkg


def _alerts(eng: ContextEngine) -> dict[str, str]:
    return {name: a.detail for name, a in eng.status().alerts.items()}


def test_skips_are_reported_with_their_reason_and_raise_no_alert(engine: ContextEngine,
                                                                 tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    snap = engine.wait(engine.ingest(paths=[str(pkg)]), timeout=60)
    assert snap.state == "done" and snap.errors == ()
    assert sorted(snap.skipped, key=lambda f: f.path) == [
        FileIssue(str(pkg / "__init__.py"), "empty"),
        FileIssue(str(pkg / "cacert.pem"), "blob", "base64"),
        FileIssue(str(pkg / "logo.png"), "unsupported"),
        FileIssue(str(pkg / "py.typed"), "empty")]
    assert snap.files_skipped == 4 and len(snap.sources) == 1
    assert ALERT_INGEST_FAILED not in _alerts(engine)


def test_a_failure_alerts_until_a_later_ingest_stores_the_file(engine: ContextEngine,
                                                               tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    bad = pkg / "settings.json"
    bad.write_text('{"tide": [1, 2')
    snap = engine.wait(engine.ingest(paths=[str(pkg)]), timeout=60)
    assert snap.state == "done" and snap.errors == (FileIssue(str(bad), "malformed"),)
    assert len(snap.skipped) == 4
    assert _alerts(engine)[ALERT_INGEST_FAILED] == "1 file failed"
    other = engine.wait(engine.ingest(text="An unrelated note on moorings."), timeout=60)
    assert other.state == "done"
    assert ALERT_INGEST_FAILED in _alerts(engine)  # its cause has not cleared
    bad.write_text('{"tide": [1, 2]}')
    fixed = engine.wait(engine.ingest(paths=[str(pkg)]), timeout=60)
    assert fixed.errors == () and fixed.files_unchanged == 1
    assert ALERT_INGEST_FAILED not in _alerts(engine)


def test_a_failure_clears_when_the_file_is_deleted(engine: ContextEngine,
                                                   tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nHarbour notes.\n")
    (docs / "broken.json").write_text("{")
    (docs / "more.json").write_text("[1,")
    snap = engine.wait(engine.ingest(paths=[str(docs)]), timeout=60)
    assert len(snap.errors) == 2
    assert _alerts(engine)[ALERT_INGEST_FAILED] == "2 files failed"
    (docs / "broken.json").unlink()
    assert _alerts(engine)[ALERT_INGEST_FAILED] == "1 file failed"
    engine.delete(str(docs))  # the user lets the folder go: its failures with it
    assert ALERT_INGEST_FAILED not in _alerts(engine)
