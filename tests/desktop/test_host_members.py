"""The desktop host is composed of members, not mixins: what it hears of the engine is
its ``events`` member, built with explicit arguments (issue 34)."""

from __future__ import annotations

from desktop.host import EngineHost
from desktop.host_events import EngineEvents
from desktop.qt import QObject


def test_the_host_has_no_mixins() -> None:
    assert EngineHost.__bases__ == (QObject,)


def test_the_host_hears_the_engine_through_its_member(qapp: object, tmp_path: object) -> None:
    host = EngineHost(tmp_path, serve=False)  # type: ignore[arg-type]
    assert isinstance(host.events, EngineEvents)
    assert host.jobs == {} and host.active_alerts == {} and not host.model_loaded
    assert host.watch_report.folders == () and host.watch_jobs == set()
