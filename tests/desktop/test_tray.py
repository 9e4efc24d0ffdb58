"""Tray looks, icons and menu against a real host."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.icons import TRAY_STATES, draw_state, state_icon
from desktop.tray import Tray, look_for
from engine import JobSnapshot

pytestmark = pytest.mark.gui


def job(state: str, total: int, done: int) -> JobSnapshot:
    return JobSnapshot(id=state + str(total), kind="paths", state=state,  # type: ignore[arg-type]
                       created=0.0, files_total=total, files_done=done)


def look(state: str, paused: bool, jobs: list[JobSnapshot], alerts: dict[str, str],
         unseen: dict[str, str]) -> tuple[str, int | None]:
    return look_for(state, paused, jobs, alerts, unseen)[:2]


def test_look_follows_state_jobs_pause_and_attention() -> None:
    assert look("ready", False, [], {}, {}) == ("idle", None)
    assert look("starting", False, [], {}, {}) == ("starting", None)
    assert look("loading", False, [], {}, {}) == ("starting", None)
    assert look("locked", False, [], {}, {}) == ("locked", None)  # not a failure
    assert look("error", False, [], {}, {}) == ("attention", None)
    running = [job("running", 4, 1), job("done", 9, 9)]
    assert look("ready", False, running, {}, {}) == ("ingesting", 25)
    assert look("ready", True, running, {}, {}) == ("paused", None)
    assert look("ready", False, [job("queued", 0, 0)], {}, {}) == ("ingesting", 0)
    # an unseen job problem asks for attention, but never hides ingesting or paused
    unseen = {"j1": "notes: 2 files could not be ingested"}
    assert look("ready", False, [], {}, unseen) == ("attention", None)
    assert look("ready", False, running, {}, unseen) == ("ingesting", 25)
    assert look("ready", True, running, {}, unseen) == ("paused", None)
    # an engine alert that lasts (the vector store is down) wins, with its reason
    alerts = {"context_engine.vector_db.unavailable": "the vector store is unavailable"}
    shown, _, tip = look_for("ready", False, running, alerts, unseen)
    assert shown == "attention" and tip.endswith("the vector store is unavailable")
    _, _, tip = look_for("ready", False, [], {}, unseen)
    assert tip == "ctx: needs attention, notes: 2 files could not be ingested"


def test_each_state_draws_a_different_icon(qtbot: Any) -> None:
    images = {s: draw_state(32, s, 40).toImage() for s in TRAY_STATES}
    for s, img in images.items():
        assert img.width() == 32 and not img.isNull(), s
    distinct = {bytes(img.constBits()) for img in images.values()}
    assert len(distinct) == len(TRAY_STATES)
    assert draw_state(32, "ingesting", 10).toImage() != draw_state(32, "ingesting", 90).toImage()
    assert not state_icon("idle").isNull()
    with pytest.raises(ValueError):
        draw_state(16, "sleepy")


def test_tray_menu_and_look_with_a_real_host(host: Any, qtbot: Any) -> None:
    tray = Tray(host)
    texts = [a.text() for a in tray.menu.actions() if not a.isSeparator()]
    assert texts == ["Open ctx", "Ingest files...", "Ingest folder...", "Pause ingestion",
                     "Sync coding sessions now", "Quit"]
    assert tray.look == "idle" and tray.tooltip() == "ctx: ready"
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        tray.act_pause.trigger()
    assert tray.look == "paused" and tray.act_pause.text() == "Resume ingestion"
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        tray.act_pause.trigger()
    assert tray.look == "idle"
    with qtbot.waitSignal(tray.quit_requested, timeout=1000):
        tray.act_quit.trigger()
    with qtbot.waitSignal(tray.open_requested, timeout=1000):
        tray.act_open.trigger()
    from desktop.notices import Notice

    host.alert.emit(Notice("ingest_failed", "notes: 2 files could not be ingested", 1050,
                           job="j1"))
    assert tray.look == "attention" and "2 files could not be ingested" in tray.tooltip()
    tray.acknowledge()
    assert tray.look == "idle" and tray.tooltip() == "ctx: ready"


def test_sync_from_the_tray_runs_on_the_host(host: Any, qtbot: Any) -> None:
    tray = Tray(host)
    with qtbot.waitSignal(host.job_progress, timeout=30000,  # the engine's sync job ends
                          check_params_cb=lambda s: s.kind == "sync" and s.state == "done"):
        tray.act_sync.trigger()


def test_the_look_follows_jobs_pause_and_clears_with_its_cause(host: Any, qtbot: Any,
                                                               tmp_path: Any) -> None:
    """Issue 22 (3, 8): one balloon per job, its reason in the tooltip; paused and
    ingesting show through an unseen failure; seeing the window clears it."""
    tray = Tray(host)
    looks: list[str] = []
    tray.look_changed.connect(looks.append)
    bad = tmp_path / "inbox"
    bad.mkdir()
    (bad / "scan.json").write_text("{\"tide\": [1, 2")  # fails (malformed; a binary file is a skip)
    (bad / "note.md").write_text("# Note\n\nTide tables for the harbour.\n")
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.ingest_paths([str(bad)])
    qtbot.wait(200)  # the engine's own ingestion alert, if it were told, comes too
    assert tray.balloons == ["inbox: 1 file could not be ingested"]
    assert tray.look == "attention"
    assert tray.tooltip() == "ctx: needs attention, inbox: 1 file could not be ingested"
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        host.pause_ingestion()
    assert tray.look == "paused" and tray.tooltip() == "ctx: ingestion paused"
    host.ingest_paths([str(bad / "note.md")])
    qtbot.waitUntil(lambda: "ingestion paused; note.md: " in tray.tooltip(), timeout=10000)
    with qtbot.waitSignal(host.job_progress, check_params_cb=lambda s: s.final,
                          timeout=30000):
        host.resume_ingestion()
    assert "ingesting" in looks[looks.index("paused"):]
    assert tray.look == "attention"  # still not seen
    tray.acknowledge()  # the window was opened
    assert tray.look == "idle" and tray.tooltip() == "ctx: ready"
    assert len(tray.balloons) == 1  # the unchanged re-ingest told nothing


def test_locked_then_unlocked_the_tooltip_says_so(make_host: Any, qtbot: Any, data_dir: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import init_store
    from tests.conftest import TEST_PASSPHRASE

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    tray = Tray(host)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    assert tray.look == "locked" and "locked" in tray.tooltip()
    assert tray.balloons == []  # a lock is no failure: nothing pops up
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.unlock(TEST_PASSPHRASE)
    assert tray.look == "idle" and tray.tooltip() == "ctx: ready"


def test_a_store_not_set_up_is_a_step_not_an_alarm() -> None:
    """A first run's tray icon is not red: nothing is wrong yet (no false alarm)."""
    from desktop.tray import look_for

    look, _, tip = look_for("needs_setup", False, [], {}, {})
    assert look == "starting" and tip == "ctx: not set up yet. Open ctx to create the store."
    assert look_for("error", False, [], {}, {}, "bad URL")[0] == "attention"
