"""The recovery key dialog (shown once: Copy, Save as file, a confirmation that it was
kept), the first run that makes the store with that key, and the secrets dialog."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, WrongKey, looks_like_recovery_key

pytestmark = pytest.mark.gui


def test_recovery_key_dialog_needs_the_kept_box(qtbot: Any, tmp_path: Path) -> None:
    from desktop.dialogs.recovery_key import RecoveryKeyDialog
    from desktop.qt import QApplication
    from engine import generate_recovery_key

    key = generate_recovery_key()
    dialog = RecoveryKeyDialog(key, tmp_path)
    qtbot.addWidget(dialog)
    assert dialog.key_label.text() == key
    assert not dialog.continue_button.isEnabled()
    ended: list[int] = []
    dialog.finished.connect(ended.append)
    dialog.buttons.accepted.emit()  # Continue without the box: the dialog stays
    assert ended == []
    dialog.copy()
    assert QApplication.clipboard().text() == key
    target = tmp_path / "kept" / "ctx-recovery-key.txt"
    dialog.save(target)  # a folder that does not exist: said, not raised
    assert "Not saved" in dialog.note.text() and not target.exists()
    target.parent.mkdir()
    dialog.save(target)
    assert key in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert "Saved to" in dialog.note.text()
    dialog.kept.setChecked(True)
    assert dialog.continue_button.isEnabled()
    with qtbot.waitSignal(dialog.finished, timeout=5000) as got:
        dialog.continue_button.click()
    assert got.args == [1]


def test_first_run_makes_the_store_with_the_key_it_showed(
        qtbot: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key shown at setup opens the store by itself (no passphrase anywhere)."""
    from desktop.dialogs.recovery_key import ask_to_keep_new_key
    from desktop.host import EngineHost

    given: list[str | None] = []
    dialog = ask_to_keep_new_key(data_dir, given.append)
    qtbot.addWidget(dialog)
    key = dialog.key
    assert looks_like_recovery_key(key)
    dialog.kept.setChecked(True)
    dialog.continue_button.click()
    assert given == [key]
    host = EngineHost(data_dir, serve=False)
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.create_store("a long enough passphrase", use_keychain=False, recovery_key=key)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "stopped",
                          timeout=60_000):
        host.shutdown()
    monkeypatch.delenv("CTX_PASSPHRASE")
    with ContextEngine.open(data_dir, create=False, recovery_key=key) as eng:
        assert eng.status().recovery_key
    with pytest.raises(WrongKey):
        ContextEngine.open(data_dir, create=False, passphrase="not the passphrase")


def test_cancelled_key_dialog_gives_none(qtbot: Any, data_dir: Path) -> None:
    from desktop.dialogs.recovery_key import ask_to_keep_new_key

    given: list[str | None] = []
    dialog = ask_to_keep_new_key(data_dir, given.append)
    qtbot.addWidget(dialog)
    dialog.reject()
    assert given == [None]
    assert not (data_dir / "key.json").exists()


def test_secret_dialog_checks_and_tells_a_recovery_key_from_a_passphrase(qtbot: Any) -> None:
    from desktop.dialogs.secrets import SecretDialog
    from engine import generate_recovery_key

    dialog = SecretDialog("Change passphrase", "text", current=True, new=True)
    qtbot.addWidget(dialog)
    assert dialog.validate() == "Type the current passphrase, or the recovery key."
    current, new, confirm = dialog.current, dialog.new, dialog.confirm
    assert current is not None and new is not None and confirm is not None
    current.setText("old passphrase here")
    new.setText("a new and long passphrase")
    confirm.setText("a new and long passphrase!")
    assert dialog.validate() == "The two new passphrases differ."
    dialog._try_accept()
    assert dialog.error.text() == "The two new passphrases differ."
    confirm.setText("a new and long passphrase")
    assert dialog.validate() is None
    got = dialog.secrets()
    assert (got.passphrase, got.recovery_key) == ("old passphrase here", None)
    assert got.new_passphrase == "a new and long passphrase"
    key = generate_recovery_key()
    current.setText(key)
    got = dialog.secrets()
    assert (got.passphrase, got.recovery_key) == (None, key)
    optional = SecretDialog("Restore", "text", current=True, new=False, optional=True)
    qtbot.addWidget(optional)
    assert optional.validate() is None
    assert optional.secrets().passphrase is None


def test_the_key_file_is_never_world_readable_even_with_a_loose_umask(tmp_path: Path) -> None:
    from desktop.dialogs.recovery_key import save_key_file

    old = os.umask(0)
    try:
        save_key_file(tmp_path / "k.txt", "KEY", "here")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k.txt").stat().st_mode) == 0o600


def test_the_apps_first_run_shows_the_key_before_making_the_store(
        qtbot: Any, qapp: Any, data_dir: Path, short_runtime: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """First run in the app: choices, then the recovery key (Cancel goes back to the
    choices with nothing made), then the store, which that key opens by itself."""
    import types

    from desktop.app import App
    from desktop.dialogs.first_run import FirstRunDialog
    from desktop.dialogs.recovery_key import RecoveryKeyDialog

    monkeypatch.delenv("CTX_PASSPHRASE")  # no key in the environment: the app asks
    app = App(qapp, data_dir, tray=False, serve=False)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    app.start()
    for attempt in range(2):
        qtbot.waitUntil(lambda: isinstance(app.dialog, FirstRunDialog), timeout=30_000)
        setup = app.dialog
        setup.passphrase.setText("a long enough passphrase")
        setup.confirm.setText("a long enough passphrase")
        setup.create_button.click()
        qtbot.waitUntil(lambda: isinstance(app.dialog, RecoveryKeyDialog), timeout=10_000)
        shown = app.dialog
        if attempt == 0:
            shown.reject()
            assert not (data_dir / "key.json").exists()
    key = shown.key
    shown.kept.setChecked(True)
    with qtbot.waitSignal(app.host.ready, timeout=60_000):
        shown.continue_button.click()
    app.quit()  # in order, as the app quits: nothing of it outlives the test
    qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30_000)
    with ContextEngine.open(data_dir, create=False, recovery_key=key) as eng:
        assert eng.status().recovery_key
