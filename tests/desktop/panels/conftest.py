"""Panels are driven against a real EngineHost over a real engine (fake embedder)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import JobSnapshot

pytest.importorskip("PySide6")


@pytest.fixture
def panel_host(qtbot: Any) -> Iterator[Any]:
    """An EngineHost on the test's data dir (no IPC server), open and ready."""
    from desktop.host import EngineHost

    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False)
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.start()
    yield host
    host.shutdown(wait=True)


def ingest(qtbot: Any, host: Any, paths: list[str]) -> JobSnapshot:
    """Ingest through the host as the GUI does; the finished job's snapshot."""
    finished: list[JobSnapshot] = []

    def on_job(job: JobSnapshot) -> None:
        if job.final:
            finished.append(job)
    host.job_progress.connect(on_job)
    try:
        host.ingest_paths(paths)
        qtbot.waitUntil(lambda: bool(finished), timeout=60_000)
    finally:
        host.job_progress.disconnect(on_job)
    return finished[-1]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A small folder of real documents."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "solar.md").write_text(
        "# Solar installation\n\nThe inverter converts DC from the panels to AC.\n\n"
        "## Batteries\n\nLithium batteries store the surplus for the night.\n", encoding="utf-8")
    (folder / "keys.md").write_text(
        "# Key rotation\n\nRotate the data key yearly; the vault re-encrypts in place.\n",
        encoding="utf-8")
    (folder / "wire.py").write_text(
        "def inverter_load(watts: float) -> float:\n    return watts / 230.0\n", encoding="utf-8")
    return folder
