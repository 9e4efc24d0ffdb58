"""Settings -> Security against a real host over a real store: key changes, backup,
check, restore, export and the schedule, each as the buttons run them (the ``do_*``
methods take what the dialogs collect)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import ContextEngine, WrongKey
from tests.desktop.panels.conftest import ingest

pytestmark = pytest.mark.gui

NEW_PASS = "a brand new passphrase, long"


@pytest.fixture
def panel(qtbot: Any, panel_host: Any) -> Iterator[Any]:
    from desktop.panels.security import SecurityPanel

    widget = SecurityPanel(panel_host)
    qtbot.addWidget(widget)
    qtbot.waitUntil(lambda: widget.status is not None, timeout=30_000)
    yield widget


# How long an operation may take before the test calls it stuck: generous, because a
# restore reopens the store and loads the model, which takes minutes on a loaded machine.
STUCK_MS = 240_000


def _run(qtbot: Any, panel: Any, action: Any, timeout: int = STUCK_MS) -> tuple[bool, str]:
    with qtbot.waitSignal(panel.finished, timeout=timeout) as got:
        action()
    _operation, ok, message = got.args
    return ok, message


def _ready(qtbot: Any, host: Any) -> None:
    qtbot.waitUntil(lambda: host.engine_ready, timeout=STUCK_MS)


def _sources(host: Any, qtbot: Any) -> list[str]:
    out: list[list[str]] = []
    host.run(lambda e: sorted(s.uri for s in e.sources()), out.append)
    qtbot.waitUntil(lambda: bool(out), timeout=STUCK_MS)
    return out[0]


def test_shows_how_the_key_is_kept(panel: Any) -> None:
    assert "passphrase" in panel.protection.text()
    assert "NO recovery key" in panel.protection.text()
    assert panel.last_backup.text() == "Last backup: never"
    assert panel.buttons["passphrase"].isEnabled()
    assert not panel.buttons["use-passphrase"].isEnabled()


def test_change_passphrase_then_only_the_new_one_opens(
        qtbot: Any, panel: Any, panel_host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop.dialogs.secrets import Secrets

    ok, message = _run(qtbot, panel, lambda: panel.do_change_passphrase(
        Secrets(passphrase="not it", new_passphrase=NEW_PASS)))
    assert not ok and "passphrase" in message.lower()
    ok, message = _run(qtbot, panel, lambda: panel.do_change_passphrase(
        Secrets(passphrase=os.environ["CTX_PASSPHRASE"], new_passphrase=NEW_PASS)))
    assert ok, message
    panel_host.shutdown(wait=True)
    monkeypatch.delenv("CTX_PASSPHRASE")
    with pytest.raises(WrongKey):
        ContextEngine.open(panel_host.data_dir, create=False, passphrase="correct horse "
                           "battery staple")
    with ContextEngine.open(panel_host.data_dir, create=False, passphrase=NEW_PASS):
        pass


def test_a_wrong_current_passphrase_keeps_the_dialog_and_the_new_one(
        qtbot: Any, panel: Any) -> None:
    """Issue 33 (10): the dialog stays open with the error; the new passphrase typed
    twice is kept, only the current one is cleared; the right one then closes it."""
    panel.ask_change_passphrase()
    dialog = panel.secret_dialog
    qtbot.addWidget(dialog)
    assert dialog.isVisible()
    dialog.current.setText("not the passphrase")
    dialog.new.setText(NEW_PASS)
    dialog.confirm.setText(NEW_PASS)
    with qtbot.waitSignal(panel.finished, timeout=60_000) as got:
        dialog.buttons.accepted.emit()
    assert got.args[1] is False
    assert dialog.isVisible() and not dialog.error.isHidden()
    assert "wrong" in dialog.error.text().lower() and "(wrong_key)" not in dialog.error.text()
    assert dialog.new.text() == NEW_PASS and dialog.confirm.text() == NEW_PASS
    assert dialog.current.text() == "" and dialog.buttons.isEnabled()
    dialog.current.setText(os.environ["CTX_PASSPHRASE"])
    with qtbot.waitSignal(panel.finished, timeout=60_000) as got:
        dialog.buttons.accepted.emit()
    assert got.args[1] is True and not dialog.isVisible()


def test_new_recovery_key_is_shown_once_and_opens_the_store(
        qtbot: Any, panel: Any, panel_host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop.dialogs.secrets import Secrets

    ok, message = _run(qtbot, panel, lambda: panel.do_new_recovery_key(
        Secrets(passphrase=os.environ["CTX_PASSPHRASE"])))
    assert ok, message
    dialog = panel.recovery_dialog
    key = dialog.key
    assert dialog.isVisible() and dialog.key_label.text() == key
    qtbot.waitUntil(lambda: "A recovery key can unlock" in panel.protection.text(),
                    timeout=30_000)
    dialog.kept.setChecked(True)
    dialog.continue_button.click()
    panel_host.shutdown(wait=True)
    monkeypatch.delenv("CTX_PASSPHRASE")
    with ContextEngine.open(panel_host.data_dir, create=False, recovery_key=key):
        pass


def test_backup_check_and_restore_from_the_app(qtbot: Any, panel: Any, panel_host: Any,
                                               docs: Path, tmp_path: Path) -> None:
    ingest(qtbot, panel_host, [str(docs / "solar.md")])
    before = _sources(panel_host, qtbot)
    folder = tmp_path / "backups"
    folder.mkdir()
    ok, message = _run(qtbot, panel, lambda: panel.do_backup(str(folder)))
    assert ok, message
    [backup] = list(folder.glob("ctx-backup-*.ctxbackup"))
    qtbot.waitUntil(lambda: panel.last_backup.text() != "Last backup: never", timeout=30_000)
    ok, message = _run(qtbot, panel, lambda: panel.do_verify(str(backup)))
    assert ok and "1 sources" in message, message
    ingest(qtbot, panel_host, [str(docs / "keys.md")])
    assert len(_sources(panel_host, qtbot)) == 2
    from desktop.dialogs.secrets import Secrets

    ok, message = _run(qtbot, panel, lambda: panel.do_restore(
        str(backup), Secrets(passphrase="wrong passphrase")))
    assert not ok and "as it was" in message
    _ready(qtbot, panel_host)
    assert len(_sources(panel_host, qtbot)) == 2  # nothing was touched
    ok, message = _run(qtbot, panel, lambda: panel.do_restore(
        str(backup), Secrets(passphrase=os.environ["CTX_PASSPHRASE"])))
    assert ok, message
    _ready(qtbot, panel_host)
    assert _sources(panel_host, qtbot) == before
    kept = list(panel_host.data_dir.parent.glob(panel_host.data_dir.name + ".replaced-*"))
    assert len(kept) == 1 and (kept[0] / "vault.db").exists()


def test_damaged_backup_is_said_by_name(qtbot: Any, panel: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ctxbackup"
    bad.write_bytes(b"not a backup at all" * 100)
    ok, message = _run(qtbot, panel, lambda: panel.do_verify(str(bad)))
    assert not ok and "backup" in message.lower()


def test_rotate_is_the_running_engines_job_and_searches_go_on(
        qtbot: Any, panel: Any, panel_host: Any, docs: Path) -> None:
    """Issue 32: the button runs the engine's online rotation (a job of kind "rotate"):
    the engine never closes, the job's progress is said in the panel's banner, and a
    search asked while the job runs is answered. The job is held before its swap (it
    waits there for the engine's warm-up thread: here one that waits for the test), so
    the search is answered during the rotation whatever the machine's speed."""
    from desktop.dialogs.secrets import Secrets

    ingest(qtbot, panel_host, [str(docs)])
    before = _sources(panel_host, qtbot)
    key_file = panel_host.data_dir / "key.json"
    old_id = json.loads(key_file.read_text())["key_id"]
    states: list[str] = []
    said: list[str] = []
    hits: list[Any] = []

    def moved(job: Any) -> None:  # connected after the panel's: its banner is updated
        if job.kind == "rotate" and not job.final:
            said.append(panel.banner.text())
    panel_host.state_changed.connect(states.append)
    panel_host.job_progress.connect(moved)
    release = threading.Event()
    held = threading.Thread(target=release.wait, args=(120,))
    held.start()
    life = panel_host._engine._life  # the engine's Lifecycle member owns the warm-up thread
    assert hasattr(life, "_warming")  # a rename here would make the hold below a no-op
    life._warming = held  # the rotation waits for it before its swap
    try:
        with qtbot.waitSignal(panel.finished, timeout=120_000) as got:
            panel.do_rotate(Secrets(passphrase=os.environ["CTX_PASSPHRASE"]))
            qtbot.waitUntil(lambda: any("changing the key" in t.lower() for t in said),
                            timeout=60_000)
            panel_host.run(lambda e: e.search("inverter"), hits.append)
            qtbot.waitUntil(lambda: bool(hits), timeout=60_000)
            assert panel.busy == "rotate" and not release.is_set()  # still rotating
            release.set()
    finally:
        release.set()
    _operation, ok, message = got.args
    assert ok, message
    assert any("solar.md" in h.source for h in hits[0])
    new_id = json.loads(key_file.read_text())["key_id"]
    assert new_id != old_id and f"({old_id} → {new_id})" in message
    assert "stopped" not in states and panel_host.engine_ready  # never closed
    assert _sources(panel_host, qtbot) == before


def test_rotate_closed_keeps_the_sources_and_changes_the_key(
        qtbot: Any, panel: Any, panel_host: Any, docs: Path) -> None:
    """The way a store whose vectors are kept in Chroma is rotated: closed and opened."""
    from desktop.dialogs.secrets import Secrets

    ingest(qtbot, panel_host, [str(docs)])
    before = _sources(panel_host, qtbot)
    key_file = panel_host.data_dir / "key.json"
    old_id = json.loads(key_file.read_text())["key_id"]
    ok, message = _run(qtbot, panel, lambda: panel._rotate_closed(
        Secrets(passphrase=os.environ["CTX_PASSPHRASE"])), timeout=120_000)
    assert ok, message
    _ready(qtbot, panel_host)
    assert json.loads(key_file.read_text())["key_id"] != old_id
    assert _sources(panel_host, qtbot) == before
    hits: list[Any] = []
    panel_host.run(lambda e: e.search("inverter"), hits.append)
    qtbot.waitUntil(lambda: bool(hits), timeout=30_000)
    assert any("solar.md" in h.source for h in hits[0])


def test_export_writes_the_plaintext_the_user_asked_for(qtbot: Any, panel: Any,
                                                        panel_host: Any, docs: Path,
                                                        tmp_path: Path) -> None:
    ingest(qtbot, panel_host, [str(docs)])
    out = tmp_path / "out.jsonl"
    ok, message = _run(qtbot, panel, lambda: panel.do_export(str(out), "jsonl"))
    assert ok and "3 sources" in message, message
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert any("Lithium batteries" in json.dumps(r) for r in rows)


def test_schedule_is_saved_checked_and_read_back(qtbot: Any, panel: Any, panel_host: Any,
                                                 tmp_path: Path) -> None:
    panel.schedule.setChecked(True)
    panel.folder.setText("relative/folder")
    assert not panel.save_schedule()
    assert "absolute" in panel.banner.text()
    panel.folder.setText(str(tmp_path / "scheduled"))
    panel.keep.setValue(3)
    with qtbot.waitSignal(panel_host.config_changed, timeout=30_000):
        assert panel.save_schedule()
    assert panel_host.config.backup.schedule and panel_host.config.backup.keep == 3


def test_health_shows_the_date_of_the_last_backup(qtbot: Any, panel: Any, panel_host: Any,
                                                 tmp_path: Path) -> None:
    from desktop.panels.health import HealthPanel

    health = HealthPanel(panel_host)
    qtbot.addWidget(health)
    qtbot.waitUntil(lambda: health.data is not None and not health._busy, timeout=30_000)
    assert health.fields["Last backup"].text() == "Never"
    ok, message = _run(qtbot, panel, lambda: panel.do_backup(str(tmp_path)))
    assert ok, message
    health.refresh()
    qtbot.waitUntil(lambda: health.fields["Last backup"].text() != "Never", timeout=30_000)
    assert health.fields["Last backup"].text()[:4].isdigit()  # a date, 2026-...


def test_one_operation_at_a_time(qtbot: Any, panel: Any, tmp_path: Path) -> None:
    seen: list[bool] = []

    def start() -> None:
        panel.do_backup(str(tmp_path))
        seen.extend(b.isEnabled() for b in panel.buttons.values())
    ok, message = _run(qtbot, panel, start)
    assert ok, message
    assert seen and not any(seen)  # while it ran, every button waited
    assert panel.buttons["backup"].isEnabled() and panel.buttons["passphrase"].isEnabled()
    assert not panel.buttons["use-passphrase"].isEnabled()  # still by the key's method


def test_restore_asks_for_a_passphrase_for_this_computer_too(qtbot: Any, panel: Any,
                                                             tmp_path: Path) -> None:
    """The tab's restore is the first run's dialog: the file, the secret of its day, and a
    passphrase for this computer (a backup whose key was another computer's keychain
    restores on one without a keychain). Before, the tab asked the secret alone and such
    a restore ended in key_unavailable; the choice reaches the engine whole."""
    from desktop.dialogs.restore_backup import RestoreDialog
    from desktop.qt import QApplication, QDialog, QTimer

    backup = tmp_path / "b.ctxbackup"
    backup.write_bytes(b"x")
    seen: list[Any] = []
    asked: list[tuple[str, Any]] = []
    panel.do_restore = lambda path, got: asked.append((path, got))

    def fill() -> None:
        dialog = QApplication.activeModalWidget()
        seen.append(dialog)
        if isinstance(dialog, RestoreDialog):
            dialog.path.setText(str(backup))
            dialog.secret.setText("the passphrase of that day")
            dialog.new.setText("a passphrase for here")
            dialog.restore_button.click()
        elif dialog is not None:
            assert isinstance(dialog, QDialog)
            dialog.reject()
    QTimer.singleShot(200, fill)
    panel.ask_restore()
    assert seen and isinstance(seen[0], RestoreDialog), seen
    assert "kept beside it" in seen[0].findChildren(type(seen[0].error))[0].text()
    [(path, got)] = asked
    assert path == str(backup)
    assert got.passphrase == "the passphrase of that day"
    assert got.new_passphrase == "a passphrase for here"
