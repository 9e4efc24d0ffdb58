"""First run on a new computer, in the app: Restore from a backup instead of a new store;
a wrong passphrase is said in the same dialog and nothing is written; the right one (or
the recovery key) restores it and the app opens it."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, generate_recovery_key, init_store

pytestmark = pytest.mark.gui

PASS = "the passphrase of that day"


def _backup(tmp_path: Path, recovery: str) -> tuple[Path, list[str]]:
    """A store elsewhere (the old computer), its backup, and its sources' uris."""
    old = tmp_path / "old-computer"
    init_store(old, passphrase=PASS, use_keychain=False, recovery_key=recovery)
    with ContextEngine.open(old, create=False, passphrase=PASS) as eng:
        for i in range(3):
            eng.ingest(text=f"Ferry timetable {i}: boats leave at {i} past the hour.",
                       title=f"ferry {i}", wait=True)
        uris = sorted(s.uri for s in eng.sources())
        result = eng.backup(str(tmp_path))
    return Path(result.path), uris


@pytest.mark.parametrize("unlock", ["passphrase", "recovery key"])
def test_first_run_restores_a_backup(qtbot: Any, qapp: Any, tmp_path: Path, data_dir: Path,
                                     short_runtime: Path, monkeypatch: pytest.MonkeyPatch,
                                     unlock: str) -> None:
    from desktop.app import App
    from desktop.dialogs.first_run import FirstRunDialog
    from desktop.dialogs.restore_backup import RestoreDialog

    recovery = generate_recovery_key()
    backup, uris = _backup(tmp_path, recovery)
    monkeypatch.delenv("CTX_PASSPHRASE")
    app = App(qapp, data_dir, tray=False, serve=False)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    app.start()
    qtbot.waitUntil(lambda: isinstance(app.dialog, FirstRunDialog), timeout=30_000)
    app.dialog.restore_button.click()
    qtbot.waitUntil(lambda: isinstance(app.dialog, RestoreDialog), timeout=10_000)
    dialog = app.dialog
    dialog.restore_button.click()  # no file yet: said, the dialog stays
    assert dialog.error.text() == "Choose the backup file." and app.dialog is dialog
    dialog.path.setText(str(backup))
    dialog.secret.setText("not the passphrase")
    dialog.restore_button.click()
    qtbot.waitUntil(lambda: "Not restored" in dialog.error.text(), timeout=30_000)
    assert "wrong" in dialog.error.text().lower()
    assert not (data_dir / "key.json").exists()  # nothing written
    dialog.secret.setText(PASS if unlock == "passphrase" else recovery)
    with qtbot.waitSignal(app.host.ready, timeout=60_000):
        dialog.restore_button.click()
    assert app.dialog is None
    # Issue 33 (5): the window opens and says what came back, and Ingestion knows the
    # store is not new
    assert app.window is not None and app.window.isVisible()
    said = app.window.banner.text_shown()
    assert said.startswith("Restored the backup of ") and "3 sources" in said
    ingestion = app.window.panels["Ingestion"]
    qtbot.waitUntil(lambda: "3 sources" in ingestion.no_jobs.text(), timeout=30_000)
    found: list[list[str]] = []
    app.host.run(lambda e: sorted(s.uri for s in e.sources()), found.append)
    qtbot.waitUntil(lambda: bool(found), timeout=30_000)
    assert found[0] == uris
    app.quit()  # in order, as the app quits: nothing of it outlives the test
    qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30_000)


def test_back_returns_to_the_choices(qtbot: Any, qapp: Any, data_dir: Path,
                                     short_runtime: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop.app import App
    from desktop.dialogs.first_run import FirstRunDialog
    from desktop.dialogs.restore_backup import RestoreDialog

    monkeypatch.delenv("CTX_PASSPHRASE")
    app = App(qapp, data_dir, tray=False, serve=False)
    # a stand-in for the QApplication: quit() leaves the test's event loop running
    app.qapp = types.SimpleNamespace(quit=lambda: None)  # type: ignore[assignment]
    app.start()
    qtbot.waitUntil(lambda: isinstance(app.dialog, FirstRunDialog), timeout=30_000)
    app.dialog.restore_button.click()
    qtbot.waitUntil(lambda: isinstance(app.dialog, RestoreDialog), timeout=10_000)
    app.dialog.back_button.click()
    qtbot.waitUntil(lambda: isinstance(app.dialog, FirstRunDialog), timeout=10_000)
    assert not (data_dir / "key.json").exists()
    app.dialog.reject()  # setup cancelled: the app quits
    qtbot.waitUntil(lambda: app.host.state == "stopped", timeout=30_000)
