"""Render the app's own screens to PNG in light and dark palettes: the tray menu and
icons, the first-run and unlock dialogs, and the main window with real content (the
real MiniLM model, a real ingest), while the model loads, locked, and refusing to open
because of a setting (issue 22's Chroma URL), each with the app's own palettes.

``QT_QPA_PLATFORM=offscreen python scripts/app_screenshots.py [OUT_DIR]``
(default docs/screenshots/). Files start with ``app-`` or ``dialog-``; the
panels' own screenshots come from scripts/screenshots.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.pop("CTX_EMBEDDER", None)  # the real model: what a user's Health panel shows
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("CTX_PASSPHRASE", "screenshot passphrase")
os.environ.setdefault("CTX__KEYS__SCRYPT_N", "1024")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from desktop.appearance import dark_palette, light_palette
from desktop.qt import (
    QApplication,
    QColor,
    QEventLoop,
    QPainter,
    QPixmap,
    QTimer,
    QWidget,
)


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
             ("locked", None), ("starting", None)]
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(REPO / "docs" / "screenshots"),
                        help="the folder the PNGs are written to (default: %(default)s)")
    out = Path(parser.parse_args(argv).out)  # --help answers; it is not a folder name
    out.mkdir(parents=True, exist_ok=True)
    found = QApplication.instance()
    qapp = found if isinstance(found, QApplication) else QApplication(["ctx"])
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

    # The store cannot open: the Chroma URL of issue 22's report (backend http).
    bad_dir = work / "bad"
    init_store(bad_dir, passphrase=saved, use_keychain=False)
    (bad_dir / "config.toml").write_text(
        '[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n',
        encoding="utf-8")
    bad = EngineHost(bad_dir, serve=False)
    bad.start()
    wait_until(lambda: bad.state == "error")

    host = EngineHost(work / "data")
    loading = MainWindow(host)  # the window while the real model loads
    loading.resize(1100, 560)
    loading.show()
    shot: list[bool] = []

    def on_state(state: str) -> None:  # shot at once: the real model loads in seconds
        if state == "loading" and not shot:
            shot.append(True)
            qapp.setPalette(light_palette())
            QApplication.processEvents()  # the page laid out for its new text
            save(loading, out, "app-window-loading-light")
    host.state_changed.connect(on_state)
    host.start()
    wait_until(lambda: host.engine_ready)
    loading.close()
    files = [REPO / "README.md", REPO / "docs" / "wire.md",
             *sorted((REPO / "engine" / "retrieval").glob("*.py"))]
    host.ingest_paths([str(f) for f in files if f.exists()])
    wait_until(lambda: host.jobs and all(j.state == "done" for j in host.jobs.values()))
    host.build_context("How does a sibling process call build_context?", budget=600)
    pump(1500)

    keep: list[QWidget] = []  # panels stay connected to the hosts: keep their windows alive
    for dark in (False, True):
        tone = "dark" if dark else "light"
        qapp.setPalette(dark_palette() if dark else light_palette())  # the app's own
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

        def refused(u: UnlockDialog = unlock) -> bool:
            return "Wrong passphrase" in u.message.text()

        wait_until(refused)
        pump()
        save(unlock, out, f"dialog-unlock-wrong-{tone}")
        unlock.close()

        window = MainWindow(host)
        keep.append(window)
        window.resize(1100, 720)
        window.show()
        pump(800)
        save(window, out, f"app-window-{tone}")
        window.close()

        wrong = MainWindow(bad)  # a setting that stops the store from opening
        keep.append(wrong)
        wrong.resize(1100, 560)
        wrong.show()
        pump()
        save(wrong, out, f"app-window-error-{tone}")
        wrong.close()

        waiting = MainWindow(locked)
        keep.append(waiting)
        waiting.resize(900, 420)
        waiting.show()
        pump()
        save(waiting, out, f"app-window-locked-{tone}")
        waiting.close()

    host.shutdown(wait=True)
    locked.shutdown(wait=True)
    bad.shutdown(wait=True)
    qapp.processEvents()


if __name__ == "__main__":
    main()
