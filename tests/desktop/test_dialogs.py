"""First-run and unlock dialogs: validation, strength hint, wrong passphrase changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop.dialogs.first_run import FirstRunDialog, strength
from desktop.dialogs.unlock import UnlockDialog
from tests.conftest import TEST_PASSPHRASE

pytestmark = pytest.mark.gui


def test_strength_hint() -> None:
    assert strength("")[0] == 0
    assert strength("short")[0] == 0
    assert strength("aaaaaaaaaaaa")[0] == 0
    assert strength("tangerine42x")[0] == 1
    assert strength("correct horse battery staple")[0] == 3


def test_first_run_without_keychain_needs_a_confirmed_passphrase(qtbot: Any) -> None:
    dialog = FirstRunDialog(keychain=False)
    qtbot.addWidget(dialog)
    assert not dialog.use_keychain.isEnabled() and dialog.use_passphrase.isChecked()
    assert dialog.no_keychain_note.isVisibleTo(dialog)
    dialog.passphrase.setText("tiny")
    assert "Too short" in (dialog.validate() or "")
    dialog.passphrase.setText("correct horse battery staple")
    dialog.confirm.setText("correct horse battery stapler")
    assert dialog.validate() == "The two passphrases differ."
    dialog.create_button.click()
    assert dialog.error.isVisibleTo(dialog) and dialog.result() == 0
    dialog.confirm.setText("correct horse battery staple")
    assert "Strong" in dialog.strength_label.text()
    dialog.add_folder("/some/folder")
    dialog.add_folder("/some/folder")
    dialog.sync.setChecked(True)
    with qtbot.waitSignal(dialog.accepted, timeout=1000):
        dialog.create_button.click()
    choice = dialog.choice()
    assert choice.passphrase == "correct horse battery staple" and not choice.use_keychain
    assert choice.folders == ["/some/folder"] and choice.sync_sessions


def test_first_run_with_keychain_needs_no_passphrase(qtbot: Any) -> None:
    dialog = FirstRunDialog(keychain=True)
    qtbot.addWidget(dialog)
    assert dialog.use_keychain.isChecked() and not dialog.passphrase.isEnabled()
    assert dialog.validate() is None
    assert dialog.choice().use_keychain and dialog.choice().passphrase is None


def test_unlock_dialog_wrong_then_right(make_host: Any, qtbot: Any, data_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import init_store

    init_store(data_dir, passphrase=TEST_PASSPHRASE, use_keychain=False)
    monkeypatch.delenv("CTX_PASSPHRASE")
    host = make_host(None)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "locked",
                          timeout=30000):
        host.start()
    before = {p.name: p.stat().st_mtime_ns for p in data_dir.iterdir()}
    dialog = UnlockDialog(host)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.unlock_button.click()
    assert dialog.message.text() == "Type the passphrase first."
    dialog.passphrase.setText("wrong passphrase here")
    with qtbot.waitSignal(host.failed, timeout=30000):
        dialog.unlock_button.click()
    assert "Wrong passphrase or recovery key. Nothing was changed" in dialog.message.text()
    assert dialog.passphrase.text() == "" and dialog.passphrase.isEnabled()
    assert {p.name: p.stat().st_mtime_ns for p in data_dir.iterdir()} == before
    assert host.state == "locked"
    dialog.passphrase.setText(TEST_PASSPHRASE)
    with qtbot.waitSignal(dialog.accepted, timeout=30000):
        dialog.unlock_button.click()
    assert host.engine_ready
