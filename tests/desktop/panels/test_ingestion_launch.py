"""What the Ingestion panel shows at a launch: a watched folder's look that found nothing
new is no card and no banner (issue 33: 18); a banner about an earlier job goes when the
next one starts; a store with sources never says "No ingestion yet" (33: 5)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from desktop import config_io
from engine import JobSnapshot

pytestmark = pytest.mark.gui


def _host(qtbot: Any) -> Any:
    from desktop.host import EngineHost

    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False)
    return host


def test_a_relaunch_with_a_watched_folder_adds_no_nothing_new_card(qtbot: Any,
                                                                  tmp_path: Path) -> None:
    from desktop.panels.ingestion import IngestionPanel

    folder = tmp_path / "watched"
    folder.mkdir()
    for name in ("tides.md", "ferries.md"):
        (folder / name).write_text(f"# {name}\n\nHarbour notes about {name}.\n", "utf-8")
    data_dir = Path(os.environ["CTX_HOME"])
    first = _host(qtbot)
    with qtbot.waitSignal(first.ready, timeout=60_000):
        first.start()
    config_io.write(data_dir, {"ingest": {"watched_folders": [str(folder)]}})
    done: list[JobSnapshot] = []
    first.job_progress.connect(lambda j: done.append(j) if j.final else None)
    first.reload_config()
    qtbot.waitUntil(lambda: any(j.chunks for j in done), timeout=60_000)
    first.shutdown(wait=True)

    for _launch in range(2):  # each launch looks at the watched folder again
        host = _host(qtbot)
        panel = IngestionPanel(host)
        qtbot.addWidget(panel)
        panel.show()
        looked: list[JobSnapshot] = []
        host.job_progress.connect(lambda j, seen=looked: seen.append(j) if j.final else None)
        try:
            with qtbot.waitSignal(host.ready, timeout=60_000):
                host.start()
            qtbot.waitUntil(lambda seen=looked: bool(seen), timeout=60_000)
            qtbot.wait(300)  # the watch report and the last snapshots are in
            [job] = looked
            assert job.files_unchanged == 2 and job.chunks == 0  # it did look
            assert panel.cards == {} and not panel.banner.isVisible()
            assert panel.no_jobs.isVisible() and "2 sources" in panel.no_jobs.text()
            assert "No ingestion yet" not in panel.no_jobs.text()
        finally:
            host.shutdown(wait=True)


def test_a_banner_about_an_earlier_job_goes_when_the_next_starts(
        qtbot: Any, panel_host: Any, tmp_path: Path) -> None:
    from desktop.panels.ingestion import IngestionPanel

    panel = IngestionPanel(panel_host)
    qtbot.addWidget(panel)
    panel.show()
    one = tmp_path / "one.md"
    one.write_text("# One\n\nThe first note.\n", "utf-8")
    panel.accept_drop([str(one)])
    qtbot.waitUntil(lambda: panel.banner.kind == "ok", timeout=60_000)
    started: list[bool] = []
    panel_host.pause_ingestion()  # the next job waits: its card shows, no banner yet
    qtbot.waitUntil(lambda: panel_host.ingestion_paused, timeout=10_000)
    two = tmp_path / "two.md"
    two.write_text("# Two\n\nThe second note.\n", "utf-8")
    panel_host.job_progress.connect(lambda j: started.append(True))
    panel.accept_drop([str(two)])
    qtbot.waitUntil(lambda: len(panel.cards) == 2, timeout=30_000)
    assert started and not panel.banner.isVisible()  # "one.md: 1 file ingested" is gone
    panel_host.resume_ingestion()
    qtbot.waitUntil(lambda: panel.banner.kind == "ok" and "two.md" in
                    panel.banner.text_shown(), timeout=60_000)


def test_the_engine_own_vectors_job_has_a_card() -> None:
    from desktop.messages import job_title
    from desktop.panels.ingestion import CARD_KINDS

    snap = JobSnapshot(id="v", kind="vectors", state="running", created=0.0,
                       stage="vectors", to_embed=40, embedded=10)
    assert "vectors" in CARD_KINDS and job_title(snap) == "Vectors for stored sources"
