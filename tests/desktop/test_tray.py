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
