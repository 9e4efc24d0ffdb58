"""Ingestion panel against a real host: jobs, failures by path and reason, drops, watching."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from desktop import config_io
from engine import SourceInfo

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot: Any, panel_host: Any) -> Any:
    from desktop.panels.ingestion import IngestionPanel

    widget = IngestionPanel(panel_host)
    qtbot.addWidget(widget)
    widget.resize(900, 700)
    return widget


def test_dropped_folder_is_ingested_and_shown(qtbot: Any, panel: Any, docs: Path) -> None:
    panel.accept_drop([str(docs)])
    qtbot.waitUntil(lambda: any(c.snapshot.state == "done"
                                for c in panel.cards.values()), timeout=60_000)
    card = next(iter(panel.cards.values()))
    assert card.bar.value() == card.bar.maximum() == 3
    assert "3 of 3 files" in card.detail.text()
    assert card.title.text() == "docs"  # titled by what it ingests
    assert panel.banner.kind == "ok"
    assert panel.banner.text_shown() == "docs: 3 files ingested, 3 chunks."
    assert panel.failure_table.rowCount() == 0


@pytest.fixture
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """ingest.max_file_bytes lowered (before the host opens the engine)."""
    monkeypatch.setenv("CTX__INGEST__MAX_FILE_BYTES", "10000")


def test_bad_files_are_listed_with_path_and_reason(qtbot: Any, small_files: None, panel: Any,
                                                   tmp_path: Path, panel_host: Any) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "good.txt").write_text("A readable note about inverters.\n", encoding="utf-8")
    (bad / "blob.txt").write_bytes(bytes(range(256)) * 16)
    (bad / "dangling.md").symlink_to(tmp_path / "nowhere.md")  # unreadable even for root
    (bad / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2000))
    secret = bad / "secret.txt"
    secret.write_text("locked away\n", encoding="utf-8")
    secret.chmod(0)
    huge = bad / "huge.txt"
    huge.write_bytes(b"word " * 4000)  # over ingest.max_file_bytes
    root = os.geteuid() == 0  # root reads a mode-000 file: it is then ingested
    try:
        panel.accept_drop([str(bad)])
        qtbot.waitUntil(lambda: any(c.snapshot.state == "done"
                                    for c in panel.cards.values()), timeout=60_000)
    finally:
        secret.chmod(0o600)
    paths = {f["path"]: f["reason"] for f in panel.failures}
    # dangling.md (and secret.txt where not root) could not be read: an alarm; the
    # others were skipped on purpose and are said beside it
    assert panel.banner.kind == "error" and "could not be read" in panel.banner.text_shown()
    assert "skipped" in panel.banner.text_shown()
    assert "Binary" in paths[str(bad / "blob.txt")]
    assert "format" in paths[str(bad / "image.png")]
    assert "Larger than the largest file" in paths[str(huge)]  # words, not the key
    # issue 33 (8): a dangling link is said to be one, not "permissions or a disk error"
    assert "broken link" in paths[str(bad / "dangling.md")]
    if not root:
        assert "Could not be read" in paths[str(secret)]
    # real failures first, then the skips: none below the fold under the skips
    table = panel.failure_table
    outcomes = [table.item(r, 2).text() for r in range(table.rowCount())]
    failed = outcomes.count("Failed")
    assert failed == (1 if root else 2) and outcomes[:failed] == ["Failed"] * failed
    assert "Skipped" in outcomes[failed:] and "Failed" not in outcomes[failed:]
    assert not any("blob" in r.lower() for r in paths.values())
    card = next(iter(panel.cards.values()))
    assert "skipped" in card.state.text()
    assert panel.failure_table.rowCount() == len(panel.failures)
    stored: list[SourceInfo] = []
    panel_host.run(lambda e: e.sources(), success=stored.extend)
    qtbot.waitUntil(lambda: bool(stored), timeout=30_000)
    names = sorted(Path(s.uri).name for s in stored)
    assert names == (["good.txt", "secret.txt"] if root else ["good.txt"])


def test_folder_of_binaries_is_no_silent_success(qtbot: Any, panel: Any,
                                                  tmp_path: Path) -> None:
    folder = tmp_path / "bins"
    folder.mkdir()
    for i in range(4):
        (folder / f"dump{i}.log").write_bytes(bytes([0, 1, 2, 255]) * 600 + bytes([i]))
    panel.accept_drop([str(folder)])
    qtbot.waitUntil(lambda: any(c.snapshot.final for c in panel.cards.values()),
                    timeout=120_000)
    ended = [(c.snapshot.state, c.snapshot.error) for c in panel.cards.values()]
    assert [state for state, _ in ended] == ["done"], ended  # said, if it ended otherwise
    assert panel.banner.kind == "info"  # skips are reported, not alarmed: nothing failed
    assert "bins: 0 of 4 files ingested, 4 skipped on purpose" in panel.banner.text_shown()
    assert panel.failure_table.rowCount() == 4


def test_missing_path_is_a_clear_message(qtbot: Any, panel: Any, tmp_path: Path) -> None:
    panel.accept_drop([str(tmp_path / "gone.md")])
    assert panel.banner.kind == "error" and "gone.md" in panel.banner.text_shown()
    assert panel.cards == {}


def test_pause_and_resume(qtbot: Any, panel: Any, panel_host: Any, docs: Path) -> None:
    with qtbot.waitSignal(panel_host.paused_changed, timeout=30_000):
        panel.pause.click()
    assert panel.resume.isEnabled() and not panel.pause.isEnabled()
    panel.accept_drop([str(docs)])
    qtbot.waitUntil(lambda: bool(panel.cards), timeout=30_000)
    card = next(iter(panel.cards.values()))
    assert card.snapshot.state == "queued"
    assert card.bar.isHidden()  # a queued job has no bar that reads as full
    assert card.state.text() == "Paused" and "paused" in card.detail.text()
    with qtbot.waitSignal(panel_host.paused_changed, timeout=30_000):
        panel.resume.click()
    qtbot.waitUntil(lambda: card.snapshot.state == "done", timeout=60_000)


def test_watched_folder_reingests_changes_and_drops_deleted_files(
        qtbot: Any, panel: Any, panel_host: Any, tmp_path: Path) -> None:
    folder = tmp_path / "watched"
    folder.mkdir()
    note = folder / "note.md"
    note.write_text("# Note\n\nfirst version about inverters\n", encoding="utf-8")
    config_io.write(panel_host.data_dir, {"ingest": {"watched_folders": [str(folder)]}})
    with qtbot.waitSignal(panel_host.config_changed, timeout=30_000):
        panel_host.reload_config()

    def uris() -> list[str]:
        out: list[list[str]] = []
        panel_host.run(lambda e: [s.uri for s in e.sources()], success=out.append)
        qtbot.waitUntil(lambda: bool(out), timeout=30_000)
        return out[0]

    qtbot.waitUntil(lambda: str(note) in uris(), timeout=60_000)
    assert "watching" in panel.watch_list.item(0).text()
    other = folder / "other.md"
    other.write_text("# Other\n\nsecond file\n", encoding="utf-8")
    qtbot.waitUntil(lambda: str(other) in uris(), timeout=60_000)
    note.unlink()
    qtbot.waitUntil(lambda: str(note) not in uris(), timeout=60_000)
    assert str(other) in uris()


def test_cancel_a_queued_job(qtbot: Any, panel: Any, panel_host: Any, docs: Path) -> None:
    from engine import ContextEngine

    if not hasattr(ContextEngine, "cancel_job"):
        pytest.skip("engine.cancel_job is not in this branch yet")
    with qtbot.waitSignal(panel_host.paused_changed, timeout=30_000):
        panel.pause.click()
    panel.accept_drop([str(docs)])
    qtbot.waitUntil(lambda: bool(panel.cards), timeout=30_000)
    card = next(iter(panel.cards.values()))
    assert card.cancel.isVisible() or not card.isVisible()
    card.cancel.click()
    qtbot.waitUntil(lambda: card.snapshot.state == "cancelled", timeout=30_000)
    assert card.state.text() == "Cancelled" and card.cancel.isHidden()
    assert panel.banner.kind == "info" and "cancelled" in panel.banner.text_shown()
    with qtbot.waitSignal(panel_host.paused_changed, timeout=30_000):
        panel.resume.click()


def test_a_watched_folder_that_cannot_be_watched_says_why(qtbot: Any, panel: Any,
                                                         panel_host: Any,
                                                         tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    config_io.write(panel_host.data_dir, {"ingest": {"watched_folders": [str(missing)]}})
    with qtbot.waitSignal(panel_host.watch_changed, timeout=30_000):
        panel_host.reload_config()
    assert panel.watch_list.item(0).text() == f"{missing}  —  not watched: does not exist"


def test_a_sync_with_no_transcript_folders_says_where_it_looked(
        qtbot: Any, panel: Any, panel_host: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 (17): no Claude Code or Codex folder: not "no transcript changed since the
    last sync" (there never was one), but none found, and where ctx looked."""
    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with qtbot.waitSignal(panel_host.synced, timeout=60_000) as got:
        panel_host.sync_sessions()
    assert got.args[0].files == 0
    assert str(home / ".claude" / "projects") in got.args[0].looked_in
    text = panel.banner.text_shown()
    assert "No coding sessions were found" in text and "since the last sync" not in text
    assert "~/.claude/projects" in text and "~/.codex/sessions" in text
    qtbot.waitUntil(lambda: any(c.snapshot.kind == "sync" and c.snapshot.final
                                for c in panel.cards.values()), timeout=30_000)
    card = next(c for c in panel.cards.values() if c.snapshot.kind == "sync")
    assert "since the last sync" not in card.detail.text()
