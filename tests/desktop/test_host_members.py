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


def _desktop_classes() -> set[str]:
    import ast
    from pathlib import Path

    import desktop

    root = Path(desktop.__file__).parent
    return {n.name for p in root.rglob("*.py")
            for n in ast.walk(ast.parse(p.read_text("utf-8"))) if isinstance(n, ast.ClassDef)}


def test_the_hosts_members_are_not_its_bases() -> None:
    """No desktop class is mixed into the host: its one base is Qt's."""
    assert not {b.__name__ for b in EngineHost.__mro__[1:]} & (_desktop_classes()
                                                                - {"EngineHost"})


def test_the_events_member_is_given_signals_not_the_host(qapp: object,
                                                         tmp_path: object) -> None:
    host = EngineHost(tmp_path, serve=False)  # type: ignore[arg-type]
    held = [*vars(host.events).values(), *vars(host.events._signals).values()]
    assert not any(value is host for value in held)
    heard: list[str] = []
    host.alert_cleared.connect(heard.append)
    host.events._signals.alert_cleared.emit("a")  # the host's own signal, bound
    assert heard == ["a"]
