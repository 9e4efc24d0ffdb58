"""The main window: panels from the registry, the waiting page, errors shown, close."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.main_window import PANELS, MainWindow
from desktop.messages import describe
from engine import ErrorInfo

pytestmark = pytest.mark.gui


def test_the_window_lists_every_panel_by_class() -> None:
    assert [t for t, _ in PANELS] == ["Ingestion", "Sources", "Retrieved items",
                                      "Budget usage", "Health", "Settings", "Security"]
    assert all(isinstance(cls, type) for _, cls in PANELS)


def test_window_shows_tabs_once_ready_and_a_clear_failure(host: Any, qtbot: Any) -> None:
    window = MainWindow(host)
    qtbot.addWidget(window)
    window.show()
    assert window.stack.currentWidget() is window.tabs
    assert window.tabs.count() == len(PANELS)
    with qtbot.waitSignal(host.failed, timeout=10000):
        host.build_context("   ")
    assert window.banner.isVisible()
    assert "Type a query first" in window.banner.text_shown()
    assert "Ready." in window.status_label.text() and "requests served" in \
        window.status_label.text()


def test_waiting_page_offers_to_unlock(make_host: Any, qtbot: Any, data_dir: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import init_store
    from tests.conftest import TEST_PASSPHRASE

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    assert window.stack.currentWidget() is window.page
    assert window.page.act.text() == "Unlock..."
    with qtbot.waitSignal(window.unlock_requested, timeout=1000):
        window.page.act.click()


def test_closing_quits_only_without_a_tray(host: Any, qtbot: Any) -> None:
    window = MainWindow(host, quit_on_close=True)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.quit_requested, timeout=1000):
        window.close()
    assert window.isVisible()  # the app quits in order; the window does not just vanish
    tray_window = MainWindow(host, quit_on_close=False)
    qtbot.addWidget(tray_window)
    tray_window.show()
    with qtbot.assertNotEmitted(tray_window.quit_requested):
        tray_window.close()
    assert not tray_window.isVisible()


def test_ingest_goes_the_way_a_drop_does(host: Any, qtbot: Any, docs: Path) -> None:
    window = MainWindow(host)
    qtbot.addWidget(window)
    with qtbot.waitSignal(host.sources_changed, timeout=30000):
        window.ingest([str(docs)])


def test_describe_says_what_to_do() -> None:
    text = describe("open", ErrorInfo(1011, "wrong_key", "wrong passphrase for this store"))
    assert text.startswith("Opening the store failed: the passphrase or recovery key is wrong")
    assert "Nothing was changed" in text
    assert describe("x_y", ErrorInfo(1000, "?", "boom")) == "X y failed: boom."
