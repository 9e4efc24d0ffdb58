"""Render Settings -> Security, the recovery key dialog and the change-passphrase dialog
to PNG, light and dark.

    python scripts/key_screenshots.py [--out docs/screenshots]

A temporary store (fake embedder, headless key) gets a few documents, a backup and a
recovery key, so that the panel shows real state; the dialogs show a real (throwaway)
recovery key and a passphrase check that failed. Writes ``panel-security-<tone>.png``,
``dialog-recovery-key-<tone>.png``, ``dialog-change-passphrase-<tone>.png`` and
``dialog-restore-<tone>.png`` (first run: restore a backup), and
``panel-security-rotating-<tone>.png``: the panel while Rotate the data key runs, drawn
when the engine's rotation job reports its progress (the store stays open).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts.screenshots import isolate, make_documents, palettes, settle, wait_until


def save(widget: Any, path: Path) -> None:
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctx-key-shots-") as tmpdir:
        tmp = Path(tmpdir)
        isolate(tmp)
        import os

        from desktop import config_io
        from desktop.host import EngineHost
        from desktop.qt import QApplication
        from engine import renew_recovery_key

        found = QApplication.instance()
        app = found if isinstance(found, QApplication) else QApplication(["ctx-screenshots"])
        app.setStyle("Fusion")
        docs, _bad, _bulk = make_documents(tmp)
        host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False)
        ready: list[bool] = []
        host.ready.connect(lambda: ready.append(True))
        host.start()
        wait_until(app, lambda: bool(ready), what="the engine")
        try:
            done: list[Any] = []
            host.run(lambda e: e.wait(e.ingest(paths=[str(docs)])), done.append)
            wait_until(app, lambda: bool(done), what="ingestion")
            renew_recovery_key(host.data_dir)  # the store now has one (not shown)
            backups = tmp / "Backups"
            backups.mkdir()
            host.run(lambda e: e.backup(str(backups)), done.append)
            wait_until(app, lambda: len(done) == 2, what="a backup")
            config_io.write(host.data_dir, {"backup": {  # shown only: no scheduler runs here
                "schedule": True, "folder": "/home/you/Backups/ctx", "keep": 7,
                "every_hours": 24}})
            made = next(backups.glob("*.ctxbackup"))  # the backup just made: the banner's
            render(app, host, out, made.name)
        finally:
            host.shutdown(wait=True)
    return 0


def render(app: Any, host: Any, out: Path, backup_name: str) -> None:
    from desktop.dialogs.recovery_key import RecoveryKeyDialog
    from desktop.dialogs.restore_backup import RestoreDialog
    from desktop.dialogs.secrets import SecretDialog
    from desktop.messages import error_text
    from desktop.panels.security import SecurityPanel
    from desktop.qt import Qt
    from engine import ErrorInfo, generate_recovery_key

    key = generate_recovery_key()  # a throwaway: it opens nothing
    for tone, palette in palettes(app).items():
        app.setPalette(palette)
        panel = SecurityPanel(host)
        dialog = RecoveryKeyDialog(key, host.data_dir)
        secrets = SecretDialog("Change passphrase", "Type the current passphrase (or the "
                               "recovery key), then the new one twice.", current=True,
                               new=True)
        restore = RestoreDialog()
        restore.path.setText("/home/you/Backups/ctx/ctx-backup-20261125-093000.ctxbackup")
        restore.secret.setText("not the passphrase")
        # what the dialog says of a wrong passphrase (restore_backup.py), not made up here
        restore.show_error("Not restored: " + error_text(ErrorInfo(
            1021, "wrong_key", "the passphrase does not open this backup", {})))
        for widget in (panel, dialog, secrets, restore):
            widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        panel.resize(1100, 560)
        panel.show()

        def answered(p: SecurityPanel = panel) -> bool:
            return p.status is not None

        wait_until(app, answered, what="the panel's status")
        # the words the panel says after Back up now (security.py), of the backup made
        # above: its date is the "Last backup" line's
        panel.banner.show_message("ok", f"Backed up to ~/Backups/{backup_name}.")
        dialog.show()
        dialog.note.setText("Copied. Paste it into your password manager now; the clipboard "
                            "may be read by other programs, so copy something else after.")
        dialog.kept.setChecked(True)
        secrets.show()
        assert secrets.current is not None and secrets.new is not None \
            and secrets.confirm is not None  # all three asked for
        secrets.current.setText("old passphrase")
        secrets.new.setText("tide tables and harbour bells")
        secrets.confirm.setText("tide tables and harbour bell")
        secrets._try_accept()
        restore.show()
        settle(app, 0.4)
        save(panel, out / f"panel-security-{tone}.png")
        save(dialog, out / f"dialog-recovery-key-{tone}.png")
        save(secrets, out / f"dialog-change-passphrase-{tone}.png")
        save(restore, out / f"dialog-restore-{tone}.png")
        rotating(app, host, panel, out / f"panel-security-rotating-{tone}.png")
        for widget in (panel, dialog, secrets, restore):
            widget.close()
            widget.deleteLater()
        settle(app, 0.2)


def rotating(app: Any, host: Any, panel: Any, path: Path) -> None:
    """Press Rotate the data key (the panel's own path, with the test store's passphrase)
    and draw the panel at the first progress its job reports."""
    import os

    from desktop.dialogs.secrets import Secrets

    drawn: list[bool] = []
    ended: list[bool] = []

    def moved(job: Any) -> None:  # after the panel's own handler: its banner is updated
        if job.kind == "rotate" and job.current and not job.final and not drawn:
            settle(app, 0.05)
            save(panel, path)
            drawn.append(True)
    host.job_progress.connect(moved)
    panel.finished.connect(lambda *_: ended.append(True))
    panel.do_rotate(Secrets(passphrase=os.environ["CTX_PASSPHRASE"]))
    wait_until(app, lambda: bool(ended), what="the key rotation")
    host.job_progress.disconnect(moved)
    if not drawn:
        raise RuntimeError("the rotation reported no progress: nothing drawn")


if __name__ == "__main__":
    raise SystemExit(main())
