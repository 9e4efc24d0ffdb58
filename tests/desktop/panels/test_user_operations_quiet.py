"""An operation a person chose answers where it was started, and nowhere else.

Issue 33 (3): checking a damaged backup (the Security tab said so, rightly) also raised a
balloon "Ingesting Files failed", a red tray and a Health alert, and the audit log
recorded the backup and the check as ``ingest_job``. A real failure (an ingestion
that could not read a file) still raises one notice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gui


def _audit(qtbot: Any, host: Any) -> list[str]:
    out: list[list[str]] = []
    host.run(lambda e: [r.method for r in e.audit(limit=50)], out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=30_000)
    return out[0]


def test_a_damaged_backup_check_raises_no_alert_and_a_real_failure_does(
        qtbot: Any, panel_host: Any, tmp_path: Path) -> None:
    from desktop.panels.health import HealthPanel
    from desktop.panels.security import SecurityPanel
    from desktop.tray import Tray

    tray = Tray(panel_host)
    security = SecurityPanel(panel_host)
    health = HealthPanel(panel_host)
    for widget in (security, health):
        qtbot.addWidget(widget)
    notices: list[Any] = []
    panel_host.alert.connect(notices.append)
    said: list[str] = []
    panel_host.job_progress.connect(lambda j: said.append(j.kind) if j.final else None)

    bad = tmp_path / "bad.ctxbackup"
    bad.write_bytes(b"not a backup at all" * 5000)
    with qtbot.waitSignal(security.finished, timeout=60_000) as got:
        security.do_verify(str(bad))
    _operation, ok, message = got.args
    assert not ok and "backup" in message.lower()  # told where it was asked
    qtbot.waitUntil(lambda: "verify_backup" in said, timeout=30_000)  # its job has ended
    qtbot.wait(300)  # a notice, if one were sent, is flushed by now (JOB_FLUSH_MS)
    assert notices == [] and tray.balloons == [] and tray.look != "attention"
    assert health.alerts == []
    methods = _audit(qtbot, panel_host)
    assert "verify_backup_job" in methods and "ingest_job" not in methods

    with qtbot.waitSignal(security.finished, timeout=60_000) as got:
        security.do_backup(str(tmp_path / "backups"))
    assert got.args[1] and "(progress in Ingestion)" not in security.banner.text_shown()
    assert notices == [] and "backup_job" in _audit(qtbot, panel_host)

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "scan.json").write_text("{\"tide\": [1, 2")  # malformed: a real failure
    finished: list[Any] = []
    panel_host.job_progress.connect(lambda j: finished.append(j) if j.final and
                                    j.kind == "paths" else None)
    panel_host.ingest_paths([str(inbox)])
    qtbot.waitUntil(lambda: bool(finished) and bool(notices), timeout=60_000)
    assert len(notices) == 1 and tray.look == "attention" and len(tray.balloons) == 1
    assert "ingest_job" in _audit(qtbot, panel_host)
