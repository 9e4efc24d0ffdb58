"""What the window and the host say while the store is not open, against a real engine:
ready means ready (the model is loaded), a locked store is calm, a bad setting has a
way out in the window, and the first run shows the window (issue 22: 1, 4, 6, 10)."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop.host import EngineHost
from desktop.main_window import MainWindow
from desktop.pages import DETAIL_WIDTH
from engine import Warming
from tests.conftest import TEST_PASSPHRASE
from tests.desktop.conftest import open_fake_engine

pytestmark = pytest.mark.gui


def slow_model(seconds: float, gate: threading.Event | None = None
               ) -> Callable[[Path, str | None], Any]:
    """A factory whose engine's model takes ``seconds`` (or until ``gate``) to load."""
    def factory(data_dir: Path, passphrase: str | None) -> Any:
        engine = open_fake_engine(data_dir, passphrase)
        load = engine.rt.embedder.load

        def slow() -> Any:
            if gate is not None:
                gate.wait(30)
            else:
                time.sleep(seconds)
            return load()
        engine.rt.embedder.load = slow
        return engine
    return factory


def test_ready_means_the_model_is_loaded(make_host: Callable[..., EngineHost],
                                         qtbot: Any) -> None:
    """Issue 22 (10): "ready" only once the model is warm; a loading phase shown before."""
    gate = threading.Event()
    host = make_host(slow_model(0, gate))
    window = MainWindow(host)
    qtbot.addWidget(window)
    states: list[str] = []
    host.state_changed.connect(states.append)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "loading",
                          timeout=30000):
        host.start()
    assert host.engine_open and not host.engine_ready and not host.model_loaded
    assert window.stack.currentWidget() is window.page
    assert window.page.title.text() == "Loading the embedding model..."
    assert window.page.busy.isVisibleTo(window.page)
    assert "Loading the embedding model" in window.status_label.text()
    statuses: list[Any] = []
    host.run(lambda e: e.status(), statuses.append)  # engine calls work while it loads
    qtbot.waitUntil(lambda: bool(statuses), timeout=10000)
    assert statuses[0].model_loaded is False
    warmed: list[Warming] = []
    host.warming.connect(warmed.append)
    with qtbot.waitSignal(host.ready, timeout=30000):
        gate.set()
    assert states == ["starting", "loading", "ready"]
    assert host.model_loaded and window.stack.currentWidget() is window.tabs
    assert ("model", True) in [(w.stage, w.done) for w in warmed]


def test_a_locked_store_is_a_state_not_a_failure(make_host: Callable[..., EngineHost],
                                                 qtbot: Any, data_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 (4): no red failure, and the lock said once, calmly, with its one button."""
    from desktop.dialogs.unlock import UnlockDialog
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    window.show()
    failures: list[Any] = []
    host.failed.connect(failures.append)
    dialogs: list[UnlockDialog] = []

    def locked(state: str) -> None:  # as the app does: the dialog opens on "locked"
        if state == "locked":
            dialogs.append(UnlockDialog(host))
            dialogs[-1].show()
    host.state_changed.connect(locked)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    qtbot.wait(200)
    dialog = dialogs[0]
    qtbot.addWidget(dialog)
    assert failures == []
    assert dialog.message.isHidden()  # no red text in the dialog
    assert window.banner.isHidden()
    assert window.page.title.text() == "The store is locked."
    assert "error" not in window.page.title.styleSheet() and \
        "color" not in window.page.title.styleSheet()
    texts = [w.text() for w in window.findChildren(type(window.status_label))
             if w.isVisibleTo(window)] + [dialog.message.text()]
    assert sum("locked" in t.lower() for t in texts) <= 2  # the page title and the status line
    assert not any("CTX_PASSPHRASE" in t or "failed" in t.lower() for t in texts)
    with qtbot.waitSignal(host.failed, timeout=30000) as blocker:
        dialog.passphrase.setText("not the passphrase")
        dialog.try_unlock()
    assert blocker.args[0].error.name == "wrong_key"  # a wrong passphrase is told
    assert "Wrong passphrase" in dialog.message.text()
    with qtbot.waitSignal(host.ready, timeout=30000):
        dialog.passphrase.setText(TEST_PASSPHRASE)
        dialog.try_unlock()
    dialog.close()


def test_a_bad_setting_has_a_way_out_in_the_window(make_host: Callable[..., EngineHost],
                                                   qtbot: Any, data_dir: Path) -> None:
    """Issue 22 (1): a store that will not open because of a setting offers Settings and a
    reset of that setting, in the window; either opens the store."""
    open_fake_engine(data_dir, None).close()  # the store exists
    config = data_dir / "config.toml"
    config.write_text('[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n',
                      encoding="utf-8")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        host.start()
    page = window.page
    window.resize(1100, 600)
    assert host.open_error is not None and host.open_error.name == "config_invalid"
    assert page.detail.width() <= DETAIL_WIDTH  # a readable measure, not the window's width
    assert "Chroma server URL" in page.detail.text()
    assert "store.chroma_url" not in page.detail.text()  # a name, never a key
    assert page.settings_button.isVisibleTo(window) and page.reset_button.isVisibleTo(window)
    assert page.reset_button.text() == "Reset \u201cChroma server URL\u201d"
    assert window.banner.isHidden()  # said once, on the page
    # Settings, right there: correct the URL, save, and the store opens
    page.settings_button.click()
    settings = page.settings
    assert settings is not None and settings.isVisibleTo(window)
    assert settings.form.editors["store.chroma_url"].text() == "chroma.local:80oo"
    backend = settings.form.editors["store.vector_backend"]
    backend.setCurrentIndex(backend.findData("memory"))
    with qtbot.waitSignal(host.ready, timeout=30000):
        assert settings.save_settings()
    assert window.stack.currentWidget() is window.tabs
    host.shutdown(wait=True)

    # the same dead end, reset instead: the key goes, the store opens
    config.write_text('[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n',
                      encoding="utf-8")
    again = make_host(None)
    window2 = MainWindow(again)
    qtbot.addWidget(window2)
    with qtbot.waitSignal(again.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        again.start()
    assert window2.page.reset_button.text() == "Reset \u201cChroma server URL\u201d"
    with qtbot.waitSignal(again.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        window2.page.reset_button.click()  # still http without a URL: refused again
    assert window2.page.reset_button.text() == "Use the default vector store"
    with qtbot.waitSignal(again.ready, timeout=30000):
        window2.page.reset_button.click()
    assert "store" not in config.read_text(encoding="utf-8")


def test_a_file_that_is_not_toml_can_be_set_aside(make_host: Callable[..., EngineHost],
                                                  qtbot: Any, data_dir: Path) -> None:
    open_fake_engine(data_dir, None).close()
    (data_dir / "config.toml").write_text("[store\n", encoding="utf-8")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        host.start()
    assert window.page.reset_button.text() == "Reset all settings"
    with qtbot.waitSignal(host.ready, timeout=30000):
        window.page.reset_button.click()
    kept = list(data_dir.glob("config.toml.*.bad"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "[store\n"


# A tray icon on the offscreen platform: Qt says it has no tray window to follow.
TRAY_OFFSCREEN = "No such signal QPlatformNativeInterface::systemTrayWindowChanged"


@pytest.mark.qt_log_ignore(TRAY_OFFSCREEN)
def test_first_run_create_store_shows_the_window(qtbot: Any, qapp: Any, data_dir: Path,
                                                 short_runtime: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 (6): with a tray, "Create store" ends with the window shown."""
    from desktop.app import App
    from desktop.dialogs.first_run import FirstRunDialog

    monkeypatch.delenv("CTX_PASSPHRASE")
    app = App(qapp, data_dir, tray=True)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    try:
        with qtbot.waitSignal(app.host.state_changed,
                              check_params_cb=lambda s: s == "needs_setup", timeout=30000):
            app.start()
        dialog = app.dialog
        assert isinstance(dialog, FirstRunDialog)
        assert app.window is None or not app.window.isVisible()
        dialog.use_passphrase.setChecked(True)
        dialog.passphrase.setText("a long enough passphrase")
        dialog.confirm.setText("a long enough passphrase")
        from desktop.dialogs.recovery_key import RecoveryKeyDialog

        dialog.create_button.click()  # the recovery key comes first, kept, then the store
        qtbot.waitUntil(lambda: isinstance(app.dialog, RecoveryKeyDialog), timeout=10000)
        app.dialog.kept.setChecked(True)
        with qtbot.waitSignal(app.host.ready, timeout=30000):
            app.dialog.continue_button.click()
            # issue 33 (16): something on screen at once, not 3-5 s later: the window,
            # saying the store is being opened, with its busy bar
            assert app.window is not None and app.window.isVisible()
            assert app.host.state in ("opening", "loading")
            assert app.window.stack.currentWidget() is app.window.page
            assert app.window.page.busy.isVisible()
        assert app.window is not None and app.window.isVisible()
        assert app.window.stack.currentWidget() is app.window.tabs
    finally:
        app.quit_now()
        qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30000)
        if app.tray is not None:
            app.tray.hide()


def test_unlock_says_the_recovery_key_works_and_its_field_stays_put(
        make_host: Callable[..., EngineHost], qtbot: Any, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 (15): the dialog says the recovery key opens the store too, and the red
    line of a wrong passphrase does not move the field or the buttons."""
    from desktop.dialogs.unlock import UnlockDialog
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    dialog = UnlockDialog(host)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    words = " ".join(w.text() for w in dialog.findChildren(type(dialog.message)))
    assert "recovery key" in words.lower()
    assert "recovery key" in dialog.passphrase.placeholderText().lower()
    field, button = dialog.passphrase.geometry(), dialog.unlock_button.mapTo(
        dialog, dialog.unlock_button.rect().topLeft())
    with qtbot.waitSignal(host.failed, timeout=30000):
        dialog.passphrase.setText("not the passphrase")
        dialog.try_unlock()
    qtbot.waitUntil(lambda: dialog.message.isVisible(), timeout=5000)
    assert dialog.passphrase.geometry() == field
    assert dialog.unlock_button.mapTo(dialog, dialog.unlock_button.rect().topLeft()) == button


def test_a_bad_setting_after_unlocking_is_fixed_without_the_passphrase_again(
        make_host: Callable[..., EngineHost], qtbot: Any, data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 (4): the passphrase was right but a setting stopped the store: the unlock
    dialog closes (no stale red error) and the page's fix opens the store without
    asking for the passphrase again."""
    from desktop.dialogs.unlock import UnlockDialog
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    (data_dir / "config.toml").write_text(  # found only once the key opened the vault
        '[store]\nvector_backend = "http"\nchroma_url = "http://127.0.0.1:9"\n',
        encoding="utf-8")
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    dialog = UnlockDialog(host)
    qtbot.addWidget(dialog)
    dialog.show()
    states: list[str] = []
    host.state_changed.connect(states.append)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        dialog.passphrase.setText(TEST_PASSPHRASE)
        dialog.try_unlock()
    assert not dialog.isVisible() and dialog.result() == 1  # its part was done
    assert window.page.reset_button.isVisibleTo(window)
    with qtbot.waitSignal(host.ready, timeout=30000):
        window.page.reset_button.click()
    assert "locked" not in states  # never asked again


def test_the_settings_form_on_the_error_page_gets_the_room(
        make_host: Callable[..., EngineHost], qtbot: Any, data_dir: Path) -> None:
    """Issue 33 (4): Settings opened from the bad-setting page is not a strip: at the
    default size it takes the page's height, the Chroma URL field whole in sight."""
    from desktop.qt import QScrollArea

    open_fake_engine(data_dir, None).close()
    (data_dir / "config.toml").write_text(
        '[store]\nvector_backend = "http"\nchroma_url = "http://127.0.0.1:9"\n',
        encoding="utf-8")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    window.resize(1100, 720)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        host.start()
    window.page.show_settings()
    qtbot.wait(50)
    settings = window.page.settings
    assert settings.height() > 480
    scroll = settings.findChild(QScrollArea)
    url = settings.form.editors["store.chroma_url"]
    top_left = url.mapTo(scroll.viewport(), url.rect().topLeft())
    bottom_right = url.mapTo(scroll.viewport(), url.rect().bottomRight())
    assert scroll.viewport().rect().contains(top_left)
    assert scroll.viewport().rect().contains(bottom_right)


@pytest.mark.qt_log_ignore(TRAY_OFFSCREEN)
def test_after_unlocking_the_window_shows(qtbot: Any, qapp: Any, data_dir: Path,
                                          short_runtime: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 (15): with a tray, unlocking at launch ended with nothing on screen but
    the icon; the person just typed the passphrase: the window shows."""
    from desktop.app import App
    from desktop.dialogs.unlock import UnlockDialog
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    app = App(qapp, data_dir, tray=True, engine_factory=open_fake_engine)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    try:
        with qtbot.waitSignal(app.host.state_changed,
                              check_params_cb=lambda s: s == "locked", timeout=30000):
            app.start()
        dialog = app.dialog
        assert isinstance(dialog, UnlockDialog)
        assert app.window is None or not app.window.isVisible()
        with qtbot.waitSignal(app.host.ready, timeout=30000):
            dialog.passphrase.setText(TEST_PASSPHRASE)
            dialog.try_unlock()
        qtbot.waitUntil(lambda: app.window is not None and app.window.isVisible(),
                        timeout=5000)
    finally:
        app.quit_now()
        qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30000)
        if app.tray is not None:
            app.tray.hide()
        if app.window is not None:
            app.window.close()
