"""EngineHost against a real engine (fake embedder): life cycle, signals, IPC, threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop.host import EngineHost
from engine import JobSnapshot
from ipc.connection import connection_file_path
from ipc.discovery import find_live
from ipc.remote import RemoteEngine
from tests.conftest import TEST_PASSPHRASE
from tests.desktop.conftest import RecordingEngine, open_fake_engine

pytestmark = pytest.mark.gui


def test_start_serves_ipc_and_shutdown_cleans_up(make_host: Callable[..., EngineHost],
                                                 qtbot: Any, data_dir: Path) -> None:
    host = make_host()
    states: list[str] = []
    host.state_changed.connect(states.append)
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.start()
    assert host.engine_ready and host.state == "ready"
    assert states[0] == "starting" and states[-1] == "ready"
    assert host.config is not None and host.data_dir == data_dir.resolve()
    info = find_live(data_dir)
    assert info is not None and info["endpoint"] == host.ipc_info
    assert host.server_stats()["running"]
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "stopped",
                          timeout=30000):
        host.shutdown()
    assert not connection_file_path(data_dir).exists()
    assert not host.engine_ready
    from engine import ContextEngine

    ContextEngine.open(data_dir).close()  # the lock was released


def test_ingest_reports_progress_and_sources_changed(host: EngineHost, qtbot: Any,
                                                     docs: Path) -> None:
    snaps: list[JobSnapshot] = []
    host.job_progress.connect(snaps.append)
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.ingest_paths([str(docs)])
    # the sources are stored (keyword search) first; the job ends once their vectors are in
    qtbot.waitUntil(lambda: snaps[-1].state != "running", timeout=30000)
    final = snaps[-1]
    assert any(s.stage == "vectors" for s in snaps)
    assert final.state == "done" and final.files_done == 2 and final.chunks > 0
    assert host.jobs[final.id].state == "done"
    listed: list[Any] = []
    host.run(lambda e: e.sources(), listed.append)
    qtbot.waitUntil(lambda: bool(listed), timeout=10000)
    assert len(listed[0]) == 2


def test_builds_from_the_window_and_from_ipc_reach_build_finished(
        host: EngineHost, qtbot: Any, docs: Path) -> None:
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.ingest_paths([str(docs)])
    payloads: list[Any] = []
    with qtbot.waitSignal(host.build_finished, timeout=30000) as blocker:
        host.build_context("alpha router", payloads.append, budget=300)
    gui = blocker.args[0]
    assert gui.origin == "gui" and "alpha router" not in repr(gui)  # never the query
    assert gui.budget == 300 and 0 < gui.total_tokens <= 300
    assert gui.items[0].tokens > 0 and gui.items[0].source.endswith((".md", ".txt"))
    qtbot.waitUntil(lambda: bool(payloads), timeout=5000)
    assert payloads[0].total_tokens == gui.total_tokens

    info = find_live(host.data_dir)
    assert info is not None
    with (qtbot.waitSignal(host.build_finished, timeout=30000) as blocker,
          RemoteEngine(info, timeout=20) as remote):
        result = remote.build_context("beta packing", budget=200)
    ipc = blocker.args[0]
    assert ipc.origin == "ipc" and "beta packing" not in repr(ipc)
    assert ipc.total_tokens == result.total_tokens and ipc.budget == 200
    assert host.server_stats()["method:build_context"] == 1


def test_no_engine_call_runs_on_the_gui_thread(make_host: Callable[..., EngineHost],
                                               qtbot: Any, docs: Path) -> None:
    seen: list[tuple[str, threading.Thread]] = []

    def factory(data_dir: Path, passphrase: str | None) -> Any:
        return RecordingEngine(open_fake_engine(data_dir, passphrase), seen)

    host = make_host(factory)
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.start()
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.ingest_paths([str(docs)])
    with qtbot.waitSignal(host.build_finished, timeout=30000):
        host.build_context("alpha", budget=200)
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        host.pause_ingestion()
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        host.resume_ingestion()
    info = find_live(host.data_dir)
    assert info is not None
    with RemoteEngine(info, timeout=20) as remote:
        remote.status()
        remote.build_context("beta", budget=100)
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.delete_source(1)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "stopped",
                          timeout=30000):
        host.shutdown()
    called = {name for name, _ in seen}
    assert {"ingest()", "build_context()", "status()", "delete()", "subscribe()",
            "close()", "pause_ingestion()"} <= called
    on_gui = [name for name, thread in seen if thread is threading.main_thread()]
    assert on_gui == []


def test_failures_come_back_as_signals_with_the_error(host: EngineHost, qtbot: Any) -> None:
    with qtbot.waitSignal(host.failed, timeout=10000) as blocker:
        host.build_context("   ")
    assert blocker.args[0].operation == "build_context"
    assert blocker.args[0].error.name == "empty_query"
    got: list[BaseException] = []
    host.run(lambda e: e.delete(999), failure=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10000)
    assert type(got[0]).__name__ == "NotFound"


def test_ingestion_failures_raise_an_alert(host: EngineHost, qtbot: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    # a file that fails (malformed JSON); a binary file is a skip and raises no alert
    (bad / "broken.json").write_text('{"tide": [1, 2')
    with qtbot.waitSignal(host.alert, timeout=30000) as blocker:
        host.ingest_paths([str(bad / "broken.json")])
    notice = blocker.args[0]
    assert notice.name == "ingest_failed" and notice.job is not None
    assert notice.message == "broken.json: 1 file could not be ingested"


def test_run_before_ready_fails_clearly(make_host: Callable[..., EngineHost], qtbot: Any) -> None:
    host = make_host()
    with qtbot.waitSignal(host.failed, timeout=5000) as blocker:
        assert host.run(lambda e: e.status()) is None
    assert blocker.args[0].error.name == "engine_closed"


def test_a_locked_store_asks_and_a_wrong_passphrase_changes_nothing(
        make_host: Callable[..., EngineHost], qtbot: Any, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)  # the app's own factory
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    key_before = sorted(p.name for p in data_dir.iterdir())
    with qtbot.waitSignal(host.failed, timeout=30000) as blocker:
        host.unlock("not the passphrase")
    assert blocker.args[0].operation == "open" and blocker.args[0].error.name == "wrong_key"
    assert host.state == "locked"
    assert sorted(p.name for p in data_dir.iterdir()) == key_before
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.unlock(TEST_PASSPHRASE)


def test_first_run_needs_setup_then_creates_the_store(
        make_host: Callable[..., EngineHost], qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "needs_setup",
                          timeout=30000):
        host.start()
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.create_store("a long enough passphrase", use_keychain=False)


def test_a_store_held_by_another_engine_is_an_error_state(
        make_host: Callable[..., EngineHost], qtbot: Any, engine: Any) -> None:
    host = make_host()
    with qtbot.waitSignal(host.failed, timeout=30000) as blocker:
        host.start()
    assert blocker.args[0].error.name == "store_locked"
    assert host.state == "error" and host.open_error is not None
    assert host.open_error.name == "store_locked"


def test_serve_false_opens_without_a_server(make_host: Callable[..., EngineHost], qtbot: Any,
                                            data_dir: Path) -> None:
    host = make_host(serve=False)
    with qtbot.waitSignal(host.ready, timeout=30000):
        host.start()
    assert host.ipc_info is None and host.server_stats() == {"running": False}
    assert find_live(data_dir) is None


def test_cancel_a_queued_job(host: EngineHost, qtbot: Any, docs: Path) -> None:
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        host.pause_ingestion()
    queued: list[JobSnapshot] = []
    host.job_progress.connect(queued.append)
    host.ingest_paths([str(docs)])
    qtbot.waitUntil(lambda: bool(queued), timeout=10000)
    job_id = queued[-1].id
    with qtbot.waitSignal(host.job_progress, timeout=10000,
                          check_params_cb=lambda s: s.state == "cancelled"):
        host.cancel_job(job_id)
    assert host.jobs[job_id].state == "cancelled"
    with qtbot.waitSignal(host.paused_changed, timeout=10000):
        host.resume_ingestion()
