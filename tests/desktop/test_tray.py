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


def test_look_follows_state_jobs_pause_and_attention() -> None:
    assert look_for("ready", False, {}, False) == ("idle", None)
    assert look_for("starting", False, {}, False) == ("starting", None)
    assert look_for("locked", False, {}, False) == ("attention", None)
    assert look_for("ready", False, {}, True) == ("attention", None)
    running = {"a": job("running", 4, 1), "b": job("done", 9, 9)}
    assert look_for("ready", False, running, False) == ("ingesting", 25)
    assert look_for("ready", True, running, False) == ("paused", None)
    assert look_for("ready", False, {"a": job("queued", 0, 0)}, False) == ("ingesting", 0)


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
    host.alert.emit({"code": 1050, "name": "ingest_failed", "message": "2 files failed"})
    assert tray.look == "attention"
    tray.acknowledge()
    assert tray.look == "idle"


def test_sync_from_the_tray_runs_on_the_host(host: Any, qtbot: Any) -> None:
    tray = Tray(host)
    with qtbot.waitSignal(host.job_progress, timeout=30000,  # the engine's sync job ends
                          check_params_cb=lambda s: s.kind == "sync" and s.state == "done"):
        tray.act_sync.trigger()
