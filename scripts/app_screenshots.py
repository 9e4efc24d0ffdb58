"""Render the app's own screens to PNG in light and dark palettes: the tray menu and
icons, the first-run and unlock dialogs, and the main window with real content.

``QT_QPA_PLATFORM=offscreen python scripts/app_screenshots.py [OUT_DIR]``
(default docs/screenshots/). Files start with ``app-`` or ``dialog-``; the
panels' own screenshots come from scripts/screenshots.py.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("CTX_EMBEDDER", "fake")
os.environ.setdefault("CTX_PASSPHRASE", "screenshot passphrase")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from desktop.qt import (  # after the environment is set
    QApplication,
    QColor,
    QEventLoop,
    QPainter,
    QPalette,
    QPixmap,
    QTimer,
    QWidget,
)


def palette(dark: bool) -> QPalette:
    if not dark:
        return QApplication.style().standardPalette()
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: "#202124", QPalette.ColorRole.WindowText: "#E8EAED",
        QPalette.ColorRole.Base: "#17181A", QPalette.ColorRole.AlternateBase: "#26282C",
        QPalette.ColorRole.Text: "#E8EAED", QPalette.ColorRole.Button: "#2D2F33",
        QPalette.ColorRole.ButtonText: "#E8EAED", QPalette.ColorRole.Highlight: "#3B6FD8",
        QPalette.ColorRole.HighlightedText: "#FFFFFF", QPalette.ColorRole.ToolTipBase: "#2D2F33",
        QPalette.ColorRole.ToolTipText: "#E8EAED", QPalette.ColorRole.PlaceholderText: "#9AA0A6",
        QPalette.ColorRole.Link: "#8AB4F8", QPalette.ColorRole.BrightText: "#FF8A80",
    }
    for role, color in roles.items():
        p.setColor(role, QColor(color))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#80868B"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText, QColor("#80868B"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#80868B"))
    return p


def pump(ms: int = 200) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_until(pred: object, timeout_ms: int = 60000) -> None:
    waited = 0
    while not pred() and waited < timeout_ms:  # type: ignore[operator]
        pump(50)
        waited += 50
    if not pred():  # type: ignore[operator]
        raise SystemExit("timed out waiting for the app")


def save(widget: QWidget, out: Path, name: str) -> None:
    widget.grab().save(str(out / f"{name}.png"))
    print(out / f"{name}.png")


def tray_icons(out: Path, dark: bool) -> None:
    from desktop.icons import draw_state

    looks = [("idle", None), ("ingesting", 42), ("attention", None), ("paused", None),
             ("starting", None)]
    size, pad = 48, 16
    strip = QPixmap(len(looks) * (size + pad) + pad, size + 2 * pad)
    strip.fill(QColor("#202124" if dark else "#F1F3F4"))
    p = QPainter(strip)
    for i, (look, pct) in enumerate(looks):
        p.drawPixmap(pad + i * (size + pad), pad, draw_state(size, look, pct))
    p.end()
    name = f"app-tray-icons-{'dark' if dark else 'light'}.png"
    strip.save(str(out / name))
    print(out / name)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    qapp = QApplication.instance() or QApplication(["ctx"])
    QApplication.setStyle("Fusion")
    work = Path(tempfile.mkdtemp(prefix="ctx-shots-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", str(work))
    from desktop.dialogs.first_run import FirstRunDialog
    from desktop.dialogs.unlock import UnlockDialog
    from desktop.host import EngineHost
    from desktop.main_window import MainWindow
    from desktop.tray import Tray
    from engine import init_store

    # A locked store for the unlock dialog: created with a passphrase, opened without one.
    locked_dir = work / "locked"
    init_store(locked_dir, passphrase="the right passphrase", use_keychain=False)
    saved = os.environ.pop("CTX_PASSPHRASE")
    locked = EngineHost(locked_dir, serve=False)
    locked.start()
    wait_until(lambda: locked.state == "locked")
    os.environ["CTX_PASSPHRASE"] = saved

    host = EngineHost(work / "data")
    host.start()
    wait_until(lambda: host.engine_ready)
    files = [REPO / "README.md", REPO / "docs" / "wire.md",
             *sorted((REPO / "engine" / "retrieval").glob("*.py"))]
    host.ingest_paths([str(f) for f in files if f.exists()])
    wait_until(lambda: host.jobs and all(j.state == "done" for j in host.jobs.values()))
    host.build_context("How does a sibling process call build_context?", budget=600)
    pump(1500)

    keep: list[QWidget] = []  # panels stay connected to the hosts: keep their windows alive
    for dark in (False, True):
        tone = "dark" if dark else "light"
        qapp.setPalette(palette(dark))
        tray_icons(out, dark)

        tray = Tray(host)
        tray.menu.adjustSize()
        tray.menu.show()
        pump()
        save(tray.menu, out, f"app-tray-menu-{tone}")
        tray.menu.hide()

        first = FirstRunDialog(keychain=False)
        first.passphrase.setText("correct horse battery")
        first.confirm.setText("correct horse battery")
        first.add_folder(str(Path.home() / "Documents" / "notes"))
        first.sync.setChecked(True)
        first.show()
        pump()
        save(first, out, f"dialog-first-run-{tone}")
        first.confirm.setText("correct horse batery")
        first.create_button.click()
        pump()
        save(first, out, f"dialog-first-run-mismatch-{tone}")
        first.close()

        unlock = UnlockDialog(locked)
        unlock.show()
        unlock.passphrase.setText("not the passphrase")
        unlock.try_unlock()
        wait_until(lambda u=unlock: "Wrong passphrase" in u.message.text())  # type: ignore[misc]
        pump()
        save(unlock, out, f"dialog-unlock-wrong-{tone}")
        unlock.close()

        window = MainWindow(host)
        keep.append(window)
        window.resize(1100, 720)
        window.show()
        pump(800)
        save(window, out, f"app-window-{tone}")
        window.show_failure("ingest", {"name": "file_rejected",
                                       "message": "binary: /home/me/photos/cat.jpg"})
        pump()
        save(window, out, f"app-window-error-{tone}")
        window.close()

        waiting = MainWindow(locked)
        keep.append(waiting)
        waiting.resize(900, 420)
        waiting.show()
        pump()
        save(waiting, out, f"app-window-locked-{tone}")
        waiting.close()

    host.shutdown(wait=True)
    locked.shutdown(wait=True)
    qapp.processEvents()


if __name__ == "__main__":
    main()
