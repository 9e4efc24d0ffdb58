"""Settings panel against a real host: typed values written back to config.toml, the
config's own messages for invalid values, nothing written then."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

import pytest

from desktop.qt import QLineEdit, QSpinBox, QWidget
from engine import load_config

pytestmark = pytest.mark.gui


@pytest.fixture
def autostart(tmp_path: Path) -> Any:
    from ipc.login_item import Autostart

    return Autostart(system="linux", home=tmp_path / "home", env={},
                     command=["ctx-desktop"])


@pytest.fixture
def panel(qtbot: Any, panel_host: Any, autostart: Any) -> Any:
    from desktop.panels.settings import SettingsPanel

    widget = SettingsPanel(panel_host, autostart=autostart)
    qtbot.addWidget(widget)
    return widget


def _config(host: Any) -> Path:
    return Path(host.data_dir) / "config.toml"


def test_shows_the_typed_defaults(panel: Any) -> None:
    values = panel.values()
    assert values["packing.mode"] == "fast" and values["tiers.mode"] == "importance"
    assert values["store.vector_backend"] == "memory"  # the default: no vector in the clear
    assert not panel.form.editors["store.chroma_url"].isEnabled()
    assert values["desktop.default_budget"] == 1500
    assert values["ingest.watched_folders"] == [] and not values["desktop.start_at_login"]
    assert values["desktop.appearance"] == "system"


W = TypeVar("W", bound=QWidget)


def _editor(panel: Any, key: str, kind: type[W]) -> W:
    """The form's editor of ``key``, which the form makes of that kind."""
    editor = panel.form.editors[key]
    assert isinstance(editor, kind), (key, type(editor))
    return editor


def _http_with_a_bad_url(panel: Any) -> None:
    _choose(panel, "store.vector_backend", "http")
    _editor(panel, "store.chroma_url", QLineEdit).setText("chroma.local:80oo")


def _choose(panel: Any, key: str, value: str) -> None:
    """Pick a choice by the value stored (the combo shows its name)."""
    combo = panel.form.editors[key]
    combo.setCurrentIndex(combo.findData(value))


def test_save_writes_only_the_changes_and_the_engine_reads_them(
        qtbot: Any, panel: Any, panel_host: Any, autostart: Any, tmp_path: Path) -> None:
    _choose(panel, "packing.mode", "dense_cached")
    panel.form.editors["tiers.recent_days"].setValue(3)
    _choose(panel, "store.vector_backend", "http")
    assert panel.form.editors["store.chroma_url"].isEnabled()
    panel.form.editors["store.chroma_url"].setText("http://10.0.0.5:8000")
    panel.add_folder(str(tmp_path))
    panel.start_at_login.setChecked(True)
    with qtbot.waitSignal(panel_host.config_changed, timeout=30_000):
        assert panel.save_settings()
    written = tomllib.loads(_config(panel_host).read_text(encoding="utf-8"))
    assert written == {
        "packing": {"mode": "dense_cached"}, "tiers": {"recent_days": 3.0},
        "store": {"vector_backend": "http", "chroma_url": "http://10.0.0.5:8000"},
        "ingest": {"watched_folders": [str(tmp_path)]}, "desktop": {"start_at_login": True}}
    cfg = load_config(Path(panel_host.data_dir), environ={})
    assert cfg.packing.mode == "dense_cached" and cfg.store.vector_backend == "http"
    assert autostart.enabled()
    assert panel.banner.kind == "ok" and "next opens the store" in panel.banner.text_shown()
    assert panel.changed() == {}
    panel.start_at_login.setChecked(False)
    assert panel.save_settings() and not autostart.enabled()


def test_other_keys_in_the_file_are_kept(qtbot: Any, panel_host: Any, autostart: Any) -> None:
    from desktop.panels.settings import SettingsPanel

    _config(panel_host).write_text('[ipc]\nworkers = 2\n\n[search]\nrrf_k = 30\n',
                                   encoding="utf-8")
    widget = SettingsPanel(panel_host, autostart=autostart)
    qtbot.addWidget(widget)
    _editor(widget, "packing.max_item_tokens", QSpinBox).setValue(500)
    assert widget.save_settings()
    written = tomllib.loads(_config(panel_host).read_text(encoding="utf-8"))
    assert written == {"ipc": {"workers": 2}, "search": {"rrf_k": 30},
                       "packing": {"max_item_tokens": 500}}


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda p: (p.form.editors["tiers.recent_days"].setValue(40),
                p.form.editors["tiers.old_days"].setValue(30)), "\u201cFull text up to (days old)\u201d <= \u201cMicro summary from (days old)\u201d"),
    (lambda p: p.form.editors["packing.max_item_tokens"].setValue(0), "Any other item, max tokens"),
    (lambda p: p.form.editors["packing.live_max_share"].setValue(1.5), "Live items' share of the budget"),
    (lambda p: p.add_folder("relative/folder"), "not an absolute path"),
    (_http_with_a_bad_url, "Chroma server URL"),  # issue 22 (1): refused before it is written, not at next open
])
def test_invalid_value_shows_the_config_message_and_writes_nothing(
        panel: Any, panel_host: Any, edit: Any, needle: str) -> None:
    path = _config(panel_host)
    path.write_text('[packing]\nmode = "fast"\n', encoding="utf-8")
    panel.load()
    before = path.read_bytes()
    edit(panel)
    assert not panel.save_settings()
    assert panel.banner.kind == "error" and needle in panel.banner.text_shown()
    assert "unchanged" in panel.banner.text_shown()
    assert path.read_bytes() == before


def test_a_broken_file_is_reported_and_never_overwritten(qtbot: Any, panel_host: Any,
                                                         autostart: Any) -> None:
    from desktop.panels.settings import SettingsPanel

    _config(panel_host).write_text("[packing\nmode = 'fast'\n", encoding="utf-8")
    widget = SettingsPanel(panel_host, autostart=autostart)
    qtbot.addWidget(widget)
    assert widget.banner.kind == "error" and "not valid TOML" in widget.banner.text_shown()
    assert not widget.save.isEnabled()


def test_a_file_the_store_refuses_is_shown_and_can_be_corrected(
        qtbot: Any, panel_host: Any, autostart: Any) -> None:
    """A bad value written by hand: the form shows it with the config's message, and
    correcting it here writes a file the store opens with."""
    from desktop import config_io
    from desktop.panels.settings import SettingsPanel

    _config(panel_host).write_text('[store]\nvector_backend = "http"\n'
                                   'chroma_url = "chroma.local:80oo"\n', encoding="utf-8")
    widget = SettingsPanel(panel_host, autostart=autostart)
    qtbot.addWidget(widget)
    assert widget.banner.kind == "error" and "Chroma server URL" in widget.banner.text_shown()
    assert widget.save.isEnabled()
    url = _editor(widget, "store.chroma_url", QLineEdit)
    assert url.text() == "chroma.local:80oo"
    url.setText("http://chroma.local:8000")
    with qtbot.waitSignal(widget.saved, timeout=10_000):
        assert widget.save_settings()
    assert config_io.read(panel_host.data_dir).engine.store.chroma_url == \
        "http://chroma.local:8000"


def test_saved_watched_folder_reaches_the_ingestion_panel(
        qtbot: Any, panel: Any, panel_host: Any, tmp_path: Path) -> None:
    from desktop.panels.ingestion import IngestionPanel

    ingestion = IngestionPanel(panel_host)
    qtbot.addWidget(ingestion)
    folder = tmp_path / "notes"
    folder.mkdir()
    panel.add_folder(str(folder))
    with qtbot.waitSignal(panel_host.config_changed, timeout=30_000):
        panel.save_settings()
    qtbot.waitUntil(lambda: panel_host.watch_report.folders == (str(folder),),
                    timeout=30_000)
    assert ingestion.watch_list.item(0).text() == f"{folder}  —  watching"


def test_the_footer_never_claims_a_save_and_a_past_saved_goes_on_edit(
        qtbot: Any, panel: Any, panel_host: Any) -> None:
    """Issue 33 (12): before any save the footer names the file without "Saved"; a bad
    value is "Not saved" alone; after a save, a new edit takes the "Saved." away and the
    footer counts what is not saved yet."""
    assert "Saved" not in panel.path_label.text() and "config.toml" in panel.path_label.text()
    panel.form.editors["packing.max_item_tokens"].setValue(0)
    assert not panel.save_settings()
    assert panel.banner.kind == "error" and panel.banner.text_shown().startswith("Not saved")
    assert "Saved" not in panel.path_label.text()
    panel.form.editors["packing.max_item_tokens"].setValue(500)
    with qtbot.waitSignal(panel_host.config_changed, timeout=30_000):
        assert panel.save_settings()
    assert panel.banner.kind == "ok" and panel.banner.text_shown().startswith("Saved")
    assert panel.unsaved.text() == ""
    panel.form.editors["tiers.recent_days"].setValue(3)
    assert panel.banner.isHidden() and panel.banner.kind == ""  # the "Saved." was stale
    assert panel.unsaved.text() == "1 unsaved change"
    panel.form.editors["tiers.recent_days"].setValue(7)  # back as saved
    assert panel.unsaved.text() == ""


def test_the_whole_form_fits_the_default_window(qtbot: Any, panel_host: Any,
                                               autostart: Any) -> None:
    """Issue 33 (14): at the window's default 1100x720, Settings needs no scrolling:
    "Start at login" is in sight."""
    from desktop.main_window import MainWindow
    from desktop.panels.settings import SettingsPanel
    from desktop.qt import QScrollArea

    window = MainWindow(panel_host)
    qtbot.addWidget(window)
    window.resize(1100, 720)
    window.build_panels()
    window.show()
    settings = window.panels["Settings"]
    window.tabs.setCurrentWidget(settings)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    scroll = settings.findChild(QScrollArea)
    assert scroll is not None and isinstance(settings, SettingsPanel)
    assert scroll.verticalScrollBar().maximum() == 0
    box = settings.start_at_login
    assert scroll.viewport().rect().contains(box.mapTo(scroll.viewport(),
                                                       box.rect().bottomRight()))
