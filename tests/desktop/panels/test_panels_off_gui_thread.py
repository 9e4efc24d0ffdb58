"""Every panel, driven through its usual actions, calls the engine only off the GUI thread."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gui


class ThreadCheckedEngine:
    """Forwards to a real engine and records every method called on the main thread."""

    def __init__(self, engine: Any, violations: list[str]) -> None:
        self._engine = engine
        self._violations = violations

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._engine, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                self._violations.append(name)
            return value(*args, **kwargs)
        return call


@pytest.fixture
def checked_host(qtbot: Any) -> Iterator[tuple[Any, list[str]]]:
    from desktop.host import EngineHost
    from desktop.host_open import open_engine

    violations: list[str] = []
    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False,
                      engine_factory=lambda d, p: ThreadCheckedEngine(open_engine(d, p),
                                                                       violations))
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.start()
    yield host, violations
    host.shutdown(wait=True)


def test_no_panel_calls_the_engine_on_the_gui_thread(
        qtbot: Any, checked_host: tuple[Any, list[str]], docs: Path, tmp_path: Path) -> None:
    from desktop.panels.budget import BudgetPanel
    from desktop.panels.health import HealthPanel
    from desktop.panels.ingestion import IngestionPanel
    from desktop.panels.retrieved import RetrievedPanel
    from desktop.panels.settings import SettingsPanel
    from desktop.panels.sources import SourcesPanel
    from ipc.login_item import Autostart

    host, violations = checked_host
    ingestion = IngestionPanel(host)
    sources = SourcesPanel(host, confirm=lambda title, text: True)
    retrieved = RetrievedPanel(host)
    budget = BudgetPanel(host)
    health = HealthPanel(host, refresh_ms=200)
    settings = SettingsPanel(host, autostart=Autostart(system="linux", home=tmp_path,
                                                       env={}, command=["ctx-desktop"]))
    for widget in (ingestion, sources, retrieved, budget, health, settings):
        qtbot.addWidget(widget)
    ingestion.accept_drop([str(docs)])
    qtbot.waitUntil(lambda: sources.rows() == 3, timeout=60_000)
    retrieved.query.setText("inverter")
    with qtbot.waitSignal(host.build_finished, timeout=60_000):
        retrieved.go.click()
    qtbot.waitUntil(lambda: len(budget.builds) == 1 and bool(budget.accuracy),
                    timeout=30_000)
    health.refresh()
    qtbot.waitUntil(lambda: bool(health.data), timeout=30_000)
    watched = tmp_path / "watched"
    watched.mkdir()
    settings.add_folder(str(watched))
    with qtbot.waitSignal(host.config_changed, timeout=30_000):
        settings.save_settings()
    (watched / "new.md").write_text("# New\n\nabout inverters\n", encoding="utf-8")
    qtbot.waitUntil(lambda: sources.rows() == 4, timeout=60_000)
    sources.table.selectRow(0)
    sources.delete.click()
    qtbot.waitUntil(lambda: sources.rows() == 3, timeout=30_000)
    assert violations == []
    host._engine.status()  # the check can fail: a call from the GUI thread is recorded
    assert violations == ["status"]
