"""Quitting with work running (issue 22: 5) and a relaunch right after a quit (2), in process
against a real engine: the app asks, "Stop now" leaves the job listed at the next launch
with a Resume button, "Finish in the background" quits once the job is done, and a
quitting app tells a later launch to wait instead of swallowing it."""

from __future__ import annotations

import threading
import types
from pathlib import Path
from typing import Any

import pytest

from desktop.app import App
from desktop.instance import send, wait_until_gone
from engine import Event, JobChanged
from tests.desktop.conftest import open_fake_engine

pytestmark = pytest.mark.gui


def folder_of(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "field-notes"
    folder.mkdir()
    for i in range(n):
        (folder / f"visit{i:02d}.md").write_text(f"# Visit {i}\n\n" + f"Inverter {i}. " * 300)
    return folder


def paused_after(files: int) -> tuple[Any, threading.Event]:
    """A factory whose engine pauses ingestion once a job stored ``files`` files: a job that
    is still running when the test quits."""
    reached = threading.Event()

    def factory(data_dir: Path, passphrase: str | None) -> Any:
        engine = open_fake_engine(data_dir, passphrase)

        def listen(event: Event) -> None:
            if isinstance(event, JobChanged) and event.job.files_done >= files \
                    and not reached.is_set():
                engine.pause_ingestion()
                reached.set()
        engine.subscribe(listen)
        return engine
    return factory, reached


def start_app(qtbot: Any, qapp: Any, data_dir: Path, factory: Any = open_fake_engine) -> App:
    app = App(qapp, data_dir, engine_factory=factory, tray=False)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    with qtbot.waitSignal(app.host.ready, timeout=30000):
        app.start()
    return app


def stopped(qtbot: Any, app: App) -> None:
    qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=60000)
    if app.window is not None:
        app.window.close()


def test_quit_with_work_running_asks_and_stop_now_lists_the_job_to_resume(
        qtbot: Any, qapp: Any, data_dir: Path, short_runtime: Path, tmp_path: Path) -> None:
    folder = folder_of(tmp_path, 16)
    factory, reached = paused_after(6)
    app = start_app(qtbot, qapp, data_dir, factory)
    app.ingest([str(folder)])
    assert reached.wait(60)
    qtbot.waitUntil(lambda: bool(app.host.jobs_active), timeout=10000)
    app.quit()
    box = app.quit_box
    assert box is not None and box.isVisible() and not app.quitting  # it asks first
    assert "field-notes" in box.text() and "of 16 files" in box.text()
    app.stop_button.click()
    stopped(qtbot, app)

    again = start_app(qtbot, qapp, data_dir)
    panel = again.window.panels["Ingestion"]
    qtbot.waitUntil(lambda: any(c.snapshot.interrupted for c in panel.cards.values()),
                    timeout=30000)
    card = next(c for c in panel.cards.values() if c.snapshot.interrupted)
    assert card.title.text() == "field-notes" and card.state.text() == "Interrupted"
    assert not card.resume.isHidden() and not card.dismiss.isHidden()
    assert card.cancel.isHidden() and card.bar.isHidden()
    assert "of 16 files were stored" in card.detail.text()
    # (the engine's own "vectors" job, for the sources the quit left waiting, may end first)
    with qtbot.waitSignal(again.host.job_progress, timeout=60000,
                          check_params_cb=lambda s: s.state == "done" and s.kind == "paths"):
        card.resume.click()
    done = [j for j in again.host.jobs.values() if j.state == "done" and j.kind == "paths"][-1]
    assert done.files_done == 16 and done.files_unchanged >= 6  # stored before: skipped
    assert card.job_id not in panel.cards
    sources: list[Any] = []
    again.host.run(lambda e: e.sources(), sources.extend)
    qtbot.waitUntil(lambda: len(sources) == 16, timeout=10000)
    again.quit()
    assert again.quit_box is None  # nothing running: no question
    stopped(qtbot, again)


def test_finish_in_the_background_quits_once_the_job_is_done(
        qtbot: Any, qapp: Any, data_dir: Path, short_runtime: Path, tmp_path: Path) -> None:
    folder = folder_of(tmp_path, 8)
    factory, reached = paused_after(2)
    app = start_app(qtbot, qapp, data_dir, factory)
    app.ingest([str(folder)])
    assert reached.wait(60)
    qtbot.waitUntil(lambda: bool(app.host.jobs_active), timeout=10000)
    app.quit()
    app.finish_button.click()
    assert app.finishing and not app.quitting
    assert not app.window.isVisible()  # out of sight while it finishes
    stopped(qtbot, app)  # ingestion resumed, the job ended, then the app quit
    final = list(app.host.jobs.values())[-1]
    assert final.state == "done" and final.files_done == 8


def test_a_quitting_app_makes_the_next_launch_wait(qtbot: Any, qapp: Any, data_dir: Path,
                                                   short_runtime: Path) -> None:
    """Issue 22 (2): while it quits, the app answers "stopping" (a later launch waits for
    it to be gone and then starts), never "ok" to a show it will not do."""
    app = start_app(qtbot, qapp, data_dir)
    gate = threading.Event()
    close = app.host._engine.close

    def slow_close() -> None:  # the engine takes a moment to close, as a real one may
        gate.wait(30)
        close()
    app.host._engine.close = slow_close
    app.quit()
    assert app.quitting
    replies: list[Any] = []
    thread = threading.Thread(target=lambda: replies.append(send(data_dir, {"cmd": "show"})))
    thread.start()
    qtbot.waitUntil(lambda: bool(replies), timeout=10000)
    assert replies[0] == {"ok": False, "stopping": True, "error": "ctx is quitting"}
    gone: list[bool] = []
    waiter = threading.Thread(target=lambda: gone.append(wait_until_gone(data_dir, 30)))
    waiter.start()
    qtbot.wait(300)
    assert gone == []  # still quitting: the next launch is still waiting
    gate.set()
    stopped(qtbot, app)
    qtbot.waitUntil(lambda: gone == [True], timeout=30000)
    open_fake_engine(data_dir, None).close()  # the store was free by then
