"""Scheduled backups against a real host: off by default; on, a backup when one is due
(by the store's own date of its last backup), the app's old ones pruned to ``keep``,
the user's own files and a backup made by hand left alone; a failure reaches
``failed``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import BackupResult

pytestmark = pytest.mark.gui


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def host(qtbot: Any) -> Iterator[Any]:
    from desktop.host import EngineHost

    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False)
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.start()
    yield host
    host.shutdown(wait=True)


def _schedule(qtbot: Any, host: Any, folder: Path, keep: int = 2) -> None:
    from desktop import config_io

    config_io.write(host.data_dir, {"backup": {"schedule": True, "folder": str(folder),
                                               "keep": keep, "every_hours": 24}})
    with qtbot.waitSignal(host.config_changed, timeout=30_000):
        host.reload_config()


def _ours(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("ctx-backup-*.ctxbackup"))


def test_off_by_default(qtbot: Any, host: Any) -> None:
    from desktop.backup_schedule import BackupScheduler

    scheduler = BackupScheduler(host, host, clock=Clock())
    scheduler.check()
    assert not scheduler.running and host.config.backup.schedule is False


def test_due_backups_are_made_and_pruned(qtbot: Any, host: Any, tmp_path: Path) -> None:
    from desktop.backup_schedule import BackupScheduler

    folder = tmp_path / "backups"  # made by the first backup, owner-only
    clock = Clock()
    scheduler = BackupScheduler(host, host, clock=clock)
    _schedule(qtbot, host, folder)
    qtbot.waitUntil(lambda: not scheduler.running and len(_ours(folder)) == 1, timeout=60_000)
    assert (folder.stat().st_mode & 0o777) == 0o700
    (folder / "notes.txt").write_text("the user's own file")
    made: list[BackupResult] = []
    scheduler.backed_up.connect(made.append)
    scheduler.check()  # not due yet: nothing
    qtbot.waitUntil(lambda: not scheduler.running, timeout=30_000)
    assert made == [] and len(_ours(folder)) == 1
    for _ in range(3):
        qtbot.wait(1100)  # backups are named to the second
        clock.now += 25 * 3600
        with qtbot.waitSignal(scheduler.backed_up, timeout=60_000):
            scheduler.check()
    assert len(_ours(folder)) == 2  # keep = 2
    assert (folder / "notes.txt").exists()
    assert made[-1].path == str(folder / _ours(folder)[-1])


def test_a_failed_backup_is_reported(qtbot: Any, host: Any, tmp_path: Path) -> None:
    from desktop.backup_schedule import BackupScheduler

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    scheduler = BackupScheduler(host, host, clock=Clock())
    with qtbot.waitSignal(host.failed, timeout=60_000,
                          check_params_cb=lambda f: f.operation == "scheduled_backup") as got:
        _schedule(qtbot, host, blocker / "sub")
    assert got.args[0].error.name
    assert not scheduler.running
