"""How the app looks and lays out (issue 22: 8, 9, 11): a message never moves the controls,
long paths do not squeeze titles, audit counts are not cut, and the app's own light and
dark palettes apply without any platform theme."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from desktop.qt import QApplication, QPalette, QWidget
from tests.desktop.cells import cell

pytestmark = pytest.mark.gui


def test_a_banner_never_moves_the_controls(host: Any, qtbot: Any) -> None:
    from desktop.main_window import MainWindow
    from desktop.panels.ingestion import IngestionPanel
    from desktop.widgets import Banner

    panel = IngestionPanel(host)
    qtbot.addWidget(panel)
    panel.resize(900, 600)
    panel.show()
    qtbot.waitExposed(panel)
    holder = panel.jobs_box.parentWidget()
    assert holder is not None
    jobs_before = holder.mapTo(panel, panel.jobs_box.geometry().topLeft())
    panel.banner.show_message("error", "inbox: 4 of 5 files ingested, 1 skipped. " * 6)
    QApplication.processEvents()
    jobs_after = holder.mapTo(panel, panel.jobs_box.geometry().topLeft())
    assert jobs_before == jobs_after
    panel.banner.clear_message()
    QApplication.processEvents()
    assert holder.mapTo(
        panel, panel.jobs_box.geometry().topLeft()) == jobs_before

    window = MainWindow(host)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    tabs_before = window.tabs.geometry()
    window.banner.show_message("error", "The vector store is unavailable. Check Settings.")
    QApplication.processEvents()
    assert window.tabs.geometry() == tabs_before
    assert isinstance(window.banner, Banner) and window.banner.isVisible()


@pytest.mark.parametrize("title", ["Ingestion", "Sources", "Retrieved items", "Settings",
                                   "Security", "Health"])
def test_no_empty_band_waits_for_a_message(host: Any, qtbot: Any, title: str) -> None:
    """Issue 33 (14): a panel's message line sits beside its title or buttons, not in a
    band of its own under them that stays empty until a message comes."""
    from desktop.main_window import MainWindow

    window = MainWindow(host)
    qtbot.addWidget(window)
    window.resize(1100, 720)
    window.build_panels()
    window.show()
    panel = window.panels[title]
    window.tabs.setCurrentWidget(panel)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    panel_with_banner: Any = panel  # six panel classes, each with its message line
    banner = panel_with_banner.banner
    assert banner.isHidden()
    band = banner.geometry()
    beside = [w for w in panel.findChildren(QWidget) if w is not banner and w.isVisible()
              and w.parentWidget() is banner.parentWidget()
              and w.geometry().top() < band.bottom() and w.geometry().bottom() > band.top()]
    assert beside, "the banner's place is an empty band"


def test_long_locations_do_not_squeeze_titles(host: Any, qtbot: Any, tmp_path: Path) -> None:
    from desktop.panels.sources import SourcesPanel

    deep = tmp_path.joinpath(*[f"level-{i:02d}-of-a-deep-project-tree" for i in range(8)])
    deep.mkdir(parents=True)
    (deep / "notes.md").write_text("# Quarterly planning notes for the harbour project\n\n"
                                   "The tide gauge needs a new sensor.\n")
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        host.ingest_paths([str(deep / "notes.md")])
    panel = SourcesPanel(host)
    qtbot.addWidget(panel)
    panel.resize(1100, 500)
    panel.show()
    qtbot.waitUntil(lambda: panel.rows() == 1, timeout=10000)
    title = panel.text(0, 0)
    needed = panel.table.fontMetrics().horizontalAdvance(title)
    assert panel.table.columnWidth(0) >= needed  # the title is shown whole
    assert panel.table.columnWidth(6) < panel.table.fontMetrics().horizontalAdvance(
        str(deep / "notes.md"))  # the path is the one that gives way (cut in the middle)


def test_audit_counts_are_not_cut(host: Any, qtbot: Any) -> None:
    from desktop.panels.health import HealthPanel, counts_text

    assert counts_text({"budget": 2500, "duration_ms": 29, "items": 14, "ok": 1,
                        "total_tokens": 2480}) == "budget 2,500 · 29 ms · items 14 · tokens 2,480"
    panel = HealthPanel(host)
    qtbot.addWidget(panel)
    panel.resize(1100, 720)
    panel.show()
    from ipc.discovery import find_live
    from ipc.remote import RemoteEngine

    info = find_live(host.data_dir)
    assert info is not None
    with (qtbot.waitSignal(host.build_finished, timeout=30000),
          RemoteEngine(info, timeout=20) as remote):  # audited: a caller process asked
        remote.build_context("tides", budget=300)
    qtbot.waitUntil(lambda: panel.audit.rowCount() >= 1, timeout=30000)
    assert panel.audit.wordWrap()
    text = cell(panel.audit, 0, 4).text()
    width = panel.audit.columnWidth(4)
    lines = panel.audit.rowHeight(0) // panel.audit.fontMetrics().lineSpacing()
    assert panel.audit.fontMetrics().horizontalAdvance(text) <= width * max(1, lines)


@pytest.fixture
def restore_palette(qapp: Any) -> Any:
    palette, style = QPalette(qapp.palette()), qapp.style().name()
    yield
    qapp.setPalette(palette)
    qapp.setStyle(style)


def test_appearance_is_the_apps_own_palette(qtbot: Any, qapp: Any, data_dir: Path,
                                            short_runtime: Path, restore_palette: Any,
                                            autostart_home: Any = None) -> None:
    """Issue 22 (11): dark and light from the app's palettes (Fusion), set in Settings,
    applied at once; "system" follows the desktop, light where it says nothing."""
    from desktop import config_io
    from desktop.app import App
    from desktop.appearance import resolved
    from desktop.panels.settings import SettingsPanel
    from ipc.login_item import Autostart
    from tests.desktop.conftest import open_fake_engine

    data_dir.mkdir(parents=True, exist_ok=True)
    config_io.write(data_dir, {"desktop": {"appearance": "dark"}})
    app = App(qapp, data_dir, engine_factory=open_fake_engine, tray=False)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    try:
        assert qapp.style().name().lower() == "fusion"
        window_colour = qapp.palette().color(QPalette.ColorRole.Window)
        assert app.appearance.tone == "dark" and window_colour.lightness() < 60
        with qtbot.waitSignal(app.host.ready, timeout=30000):
            app.start()
        settings = SettingsPanel(app.host, autostart=Autostart(
            system="linux", home=data_dir.parent / "home", env={}, command=["ctx-desktop"]))
        qtbot.addWidget(settings)
        assert settings.values()["desktop.appearance"] == "dark"
        settings.appearance.setCurrentIndex(settings.appearance.findData("light"))
        with qtbot.waitSignal(app.host.config_changed, timeout=30000):
            assert settings.save_settings()
        assert app.appearance.tone == "light"
        assert qapp.palette().color(QPalette.ColorRole.Window).lightness() > 200
        assert resolved("system") in ("light", "dark")
    finally:
        app.quit_now()
        qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30000)
        if app.window is not None:
            app.window.close()


def test_a_bad_store_setting_keeps_the_chosen_look(data_dir: Path) -> None:
    """The window that offers the fix of a bad setting is drawn in the person's own
    appearance: only [desktop] is read for it (it was "system" for any bad key)."""
    from desktop.app import desktop_appearance

    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "config.toml"
    config.write_text('[desktop]\nappearance = "dark"\n\n[store]\nvector_backend = "http"\n'
                      'chroma_url = "chroma.local:80oo"\n', encoding="utf-8")
    assert desktop_appearance(data_dir) == "dark"
    config.write_text("[desktop\n", encoding="utf-8")
    assert desktop_appearance(data_dir) == "system"  # not TOML at all: the default


def test_the_window_opens_in_the_middle_and_stays_where_moved(host: Any, qtbot: Any) -> None:
    """Issue 33 (14): the window (the error page's too) was at +0+0 for the session; it
    opens in the middle of the screen, and a later show keeps where it was moved."""
    from desktop.main_window import MainWindow

    window = MainWindow(host)
    qtbot.addWidget(window)
    window.resize(600, 400)  # the offscreen screen is 800x800
    window.show()
    qtbot.waitExposed(window)
    area = window.screen().availableGeometry()
    centre = window.frameGeometry().center()
    assert abs(centre.x() - area.center().x()) <= 2 and abs(centre.y() - area.center().y()) <= 2
    window.move(area.x() + 40, area.y() + 30)
    window.hide()
    window.show()
    qtbot.waitExposed(window)
    assert window.pos().x() == area.x() + 40 and window.pos().y() == area.y() + 30
