"""The tray, the job card, the quit dialog and ``ctx status`` say one thing of a job:
the engine's description of its progress (JobSnapshot.progress), stage by stage.

Issue 33 (2, 6): the tray said 99% for a whole vector stage while the card said
"meaning-search 17%" beside a full files bar, and the quit dialog "348 of 343 files".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from engine import JobSnapshot
from engine.embedding.fake import FakeEmbedder
from ipc.status_text import progress_text

pytestmark = pytest.mark.gui
REPO = Path(__file__).resolve().parents[2]


def no_time_left(text: str) -> str:
    """The words without the time left (it moves between two readings)."""
    return re.sub(r", [0-9.]+ (s|min|h) left", "", text)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Enough text for several vector steps (STEP_TEXTS chunks each), with skips."""
    root = tmp_path / "field-notes"
    root.mkdir()
    for i in range(24):
        (root / f"note-{i:02d}.md").write_text(
            "\n\n".join(f"## Part {p}\n\n" + f"Tide gauge {i} reading {p}, harbour wall. " * 30
                        for p in range(6)), encoding="utf-8")
    (root / "empty.md").write_text("", encoding="utf-8")  # skipped on purpose
    (root / "image.bin").write_bytes(bytes(range(256)) * 8)  # skipped: binary
    return root


class _SlowEmbedder(FakeEmbedder):
    """The fake embedder, slowed so the vector stage lasts several steps: the pause the
    test asks for lands inside it however loaded the machine (with the fast fake the
    stage could end before the pause reached the engine)."""

    def encode(self, texts: Sequence[str]) -> Any:
        time.sleep(0.25)
        return super().encode(texts)


@pytest.fixture
def host(make_host: Callable[..., Any], qtbot: Any) -> Any:
    from engine import ContextEngine

    h = make_host(lambda d, p: ContextEngine.open(d, passphrase=p, embedder=_SlowEmbedder()))
    with qtbot.waitSignal(h.ready, timeout=30000):
        h.start()
    return h


def test_tray_card_and_ctx_status_say_the_same_stage(qtbot: Any, host: Any, folder: Path,
                                                     data_dir: Path) -> None:
    from desktop.job_words import quit_question
    from desktop.panels.ingestion import IngestionPanel
    from desktop.tray import Tray

    tray = Tray(host)
    panel = IngestionPanel(host)
    qtbot.addWidget(panel)
    seen: list[tuple[JobSnapshot, str, str, str, str]] = []
    status_lines: list[tuple[str, str]] = []

    def on_job(snap: JobSnapshot) -> None:  # after the tray's and the card's own redraw
        card = panel.cards.get(snap.id)
        if card is None or snap.final:
            return
        seen.append((snap, tray.tooltip(), card.detail.text(), card.current.text(),
                     quit_question(host.jobs_active)))
        if snap.progress.stage == "vectors" and not status_lines:
            host.pause_ingestion()  # hold the stage still while ctx status asks

    host.job_progress.connect(on_job)
    host.ingest_paths([str(folder)])
    qtbot.waitUntil(lambda: host.ingestion_paused, timeout=60_000)
    qtbot.waitUntil(lambda: host.jobs_active and host.jobs_active[0].waiting == "paused",
                    timeout=30_000)
    held = host.jobs_active[0]
    out = subprocess.run([sys.executable, "-m", "ipc.cli.main", "status"], cwd=REPO,
                         capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("job:"))
    status_lines.append((line, progress_text(held)))
    assert held.progress.stage == "vectors"
    assert no_time_left(progress_text(held)) in no_time_left(line)  # ctx status says it
    assert "making vectors" in tray.tooltip()  # paused, and still says the stage
    host.resume_ingestion()
    qtbot.waitUntil(lambda: not host.jobs_active, timeout=120_000)

    stages = [s.progress.stage for s, *_ in seen]
    assert "text" in stages and "vectors" in stages
    vectors = [row for row in seen if row[0].progress.stage == "vectors"]
    assert len({row[0].progress.done for row in vectors}) >= 3  # through the whole stage
    for snap, tip, detail, _current, question in seen:
        words = progress_text(snap)
        assert words in tip or host.ingestion_paused  # the tray: the engine's words
        assert snap.progress.done <= snap.progress.total
        if snap.progress.stage == "vectors":
            assert "making vectors" in tip or "paused" in tip
            assert words in detail and "Every file stored" in detail
            assert "only its vectors are left" in question and words in question
            assert not tip.endswith("(99%)") or snap.embedded * 100 >= 99 * snap.to_embed
        elif snap.progress.stage == "text":
            assert "storing text (step 1 of 2)" in tip and words.capitalize()[:20] in detail
            assert f"of {snap.files_total} files" in question or snap.files_total == 0
            done, total = snap.progress.done, snap.progress.total
            assert done <= total == snap.files_total  # never "348 of 343 files"
    currents = {row[3] for row in vectors if row[3]}
    assert len(currents) >= 2  # the current file moves during the vector stage
