"""Render every panel of the desktop app with real content to PNG, light and dark.

    python scripts/screenshots.py [--out docs/screenshots] [--size 1100x720]

A temporary store (the real MiniLM model, headless key) gets real documents (this
repository's README and a few engine modules), a file that fails to ingest,
and a folder whose ingestion is paused half-way; builds are made from the
Retrieved items panel and by an IPC caller over ZeroMQ. Each panel is then
drawn offscreen in the Fusion style with a light and a dark palette, to
``panel-<name>-light.png`` and ``panel-<name>-dark.png``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's engine and desktop, not an installed one

from engine import Event, JobChanged, JobSnapshot

PANELS = (("ingestion", "desktop.panels.ingestion", "IngestionPanel"),
          ("sources", "desktop.panels.sources", "SourcesPanel"),
          ("retrieved", "desktop.panels.retrieved", "RetrievedPanel"),
          ("budget", "desktop.panels.budget", "BudgetPanel"),
          ("health", "desktop.panels.health", "HealthPanel"),
          ("settings", "desktop.panels.settings", "SettingsPanel"))


def isolate(tmp: Path) -> None:
    """A private store for the run: nothing touches the user's data, keychain or network."""
    runtime = tmp / "run"
    runtime.mkdir(mode=0o700)
    os.environ.update({
        "CTX_HOME": str(tmp / "home"), "CTX_PASSPHRASE": "screenshots only",
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False", "QT_QPA_PLATFORM": "offscreen"})
    # the real model and key derivation, as a user has them (Settings shows no override)
    for name in ("CTX_CHROMA_URL", "CTX_EMBEDDER", "CTX__KEYS__SCRYPT_N"):
        os.environ.pop(name, None)


def make_documents(tmp: Path) -> tuple[Path, Path, Path]:
    """(docs, bad, bulk): real documents, files that fail, a folder to pause half-way."""
    docs = tmp / "Documents" / "ctx-notes"
    docs.mkdir(parents=True)
    shutil.copy(REPO / "README.md", docs / "README.md")
    for name in ("metrics.py", "tokens.py", "errors.py", "paths.py"):
        shutil.copy(REPO / "engine" / name, docs / name)
    (docs / "meeting-2026-11-18.md").write_text(
        "# Release sync, 18 November\n\n## Decisions\n\n- Ship the desktop app behind the "
        "tray icon; the window opens where no tray exists.\n- Latency budget: build_context "
        "p95 under 150 ms on a laptop.\n\n## Follow-ups\n\n- Measure the GUI event loop's "
        "longest stall while 200 IPC builds run.\n- Write the key rotation runbook.\n",
        encoding="utf-8")
    (docs / "key-rotation.md").write_text(
        "# Key rotation runbook\n\nThe data key is wrapped by the OS keychain or a "
        "passphrase (scrypt). To rotate the passphrase, unlock with the old one and wrap "
        "the same key again; the vault is not re-encrypted.\n", encoding="utf-8")
    bad = tmp / "Downloads"
    bad.mkdir()
    (bad / "scan-export.txt").write_bytes(bytes(range(256)) * 32)  # binary, named as text
    (bad / "broken-link.md").symlink_to(tmp / "gone.md")
    (bad / "checklist.md").write_text("# Checklist\n\n- back up the vault\n", encoding="utf-8")
    bulk = tmp / "Projects" / "field-notes"
    bulk.mkdir(parents=True)
    for i in range(60):
        (bulk / f"site-visit-{i:02d}.md").write_text(
            f"# Site visit {i}\n\n" + "Inverter readings, panel temperatures and battery "
            f"state of charge for array {i}. " * 40 + "\n", encoding="utf-8")
    return docs, bad, bulk


def wait_until(app: Any, cond: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what or cond}")
        app.processEvents()
        time.sleep(0.01)


def settle(app: Any, seconds: float = 0.3) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def palettes(app: Any) -> dict[str, Any]:
    """The app's own palettes (desktop.appearance), as Settings' Light and Dark apply them."""
    from desktop.appearance import dark_palette, light_palette

    return {"light": light_palette(), "dark": dark_palette()}


class Scene:
    """The store and the host, filled once; panels are made per palette."""

    def __init__(self, app: Any, tmp: Path) -> None:
        from desktop.host import EngineHost

        self.app, self.tmp = app, tmp
        self.docs, self.bad, self.bulk = make_documents(tmp)
        from desktop import config_io

        home = Path(os.environ["CTX_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        config_io.write(home, {  # before the host starts: its watch service reads it
            "ingest": {"watched_folders": [str(self.docs)]},
            "desktop": {"default_budget": 1200}, "packing": {"mode": "fast"}})
        self.host = EngineHost(home, serve=True)
        ready: list[bool] = []
        self.host.ready.connect(lambda: ready.append(True))
        self.host.start()
        wait_until(app, lambda: bool(ready), what="the engine")
        self.builds: list[dict[str, Any]] = []
        self.host.build_finished.connect(self.builds.append)

    def job_done(self, paths: list[str]) -> JobSnapshot:
        done: list[JobSnapshot] = []

        def on_job(job: JobSnapshot) -> None:
            if job.final:
                done.append(job)
        self.host.job_progress.connect(on_job)
        self.host.ingest_paths(paths)
        wait_until(self.app, lambda: bool(done), what="ingestion")
        self.host.job_progress.disconnect(on_job)
        return done[-1]

    def fill(self) -> None:
        self.job_done([str(self.docs)])
        self.job_done([str(self.bad)])
        self.pause_half_way()
        for budget in (900, 400, 2500):
            self.ipc_build("What is the p95 latency budget for build_context?", budget)
        searched: list[Any] = []
        for query in ("key rotation passphrase", "inverter battery readings", "percentile"):

            def search(e: Any, q: str = query) -> Any:
                return e.search(q)

            self.host.run(search, success=searched.append)
        wait_until(self.app, lambda: len(searched) == 3, what="searches")

    def pause_half_way(self) -> None:
        """Start the bulk folder and pause it at about a third: a running job on screen."""
        gate = threading.Event()

        def listener(event: Event) -> None:  # the engine's writer thread
            job = event.job if isinstance(event, JobChanged) else None
            if job and job.kind == "paths" and job.files_done >= 21 and not gate.is_set():
                gate.set()
                engine.pause_ingestion()
        holder: list[Any] = []

        def subscribe(e: Any) -> Any:
            holder.append(e)
            return e.subscribe(listener)

        self.host.run(subscribe)
        wait_until(self.app, lambda: bool(holder), what="subscribe")
        engine = holder[0]
        self.host.ingest_paths([str(self.bulk)])
        wait_until(self.app, gate.is_set, what="the bulk job to reach a third")
        self.host.pause_ingestion()  # the host and panels learn the paused state
        settle(self.app, 0.5)

    def ipc_build(self, query: str, budget: int) -> None:
        from ipc.remote import RemoteEngine

        result: list[Any] = []

        def sibling() -> None:
            remote = RemoteEngine.connect(self.host.data_dir)
            assert remote is not None
            with remote:
                result.append(remote.build_context(query, budget=budget))
        thread = threading.Thread(target=sibling)
        thread.start()
        wait_until(self.app, lambda: bool(result), what="an IPC build")
        thread.join()
        settle(self.app, 0.1)

    def panels(self) -> dict[str, Any]:
        import importlib

        from ipc.login_item import Autostart

        out: dict[str, Any] = {}
        for name, module, cls in PANELS:
            kind = getattr(importlib.import_module(module), cls)
            if name == "settings":
                out[name] = kind(self.host, autostart=Autostart(
                    system="linux", home=self.tmp, env={}, command=["ctx-desktop"]))
            else:
                out[name] = kind(self.host)
        return out

    def drive(self, panels: dict[str, Any]) -> None:
        app = self.app
        ingestion = panels["ingestion"]
        wait_until(app, lambda: len(ingestion.cards) >= 3, what="job cards")
        wait_until(app, lambda: panels["sources"].rows() > 5, what="sources")
        panels["sources"].table.selectRow(1)
        retrieved = panels["retrieved"]
        retrieved.query.setText("How are latency percentiles computed?")
        retrieved.mode.setCurrentText("dense_cached")  # shows surrogate tiers
        retrieved.live_box.setChecked(True)
        retrieved.live_kind.setCurrentText("selection")
        retrieved.live_text.setPlainText("def percentile(values, q): ...  # selected in editor")
        before = len(self.builds)
        retrieved.build()
        wait_until(app, lambda: len(self.builds) > before and retrieved.go.isEnabled(),
                   what="the build")
        retrieved.table.selectRow(1)
        budget = panels["budget"]
        budget.clear_builds()
        for build in self.builds[-8:]:  # oldest first: the panel shows the newest on top
            budget.add_build(build)
        health = panels["health"]
        health.refresh()
        wait_until(app, lambda: bool(health.data) and not health._busy, what="health")
        settle(app, 0.6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--size", default="1100x720")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctx-shots-") as tmpdir:
        tmp = Path(tmpdir)
        isolate(tmp)
        from desktop.qt import QApplication, Qt

        found = QApplication.instance()
        app = found if isinstance(found, QApplication) else QApplication(["ctx-screenshots"])
        app.setStyle("Fusion")
        scene = Scene(app, tmp)
        try:
            scene.fill()
            for tone, palette in palettes(app).items():
                app.setPalette(palette)
                panels = scene.panels()
                for panel in panels.values():
                    panel.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
                    panel.resize(width, height)
                    panel.show()
                scene.drive(panels)
                for name, panel in panels.items():
                    path = out / f"panel-{name}-{tone}.png"
                    if not panel.grab().save(str(path)):
                        raise OSError(f"could not write {path}")
                    print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
                for panel in panels.values():
                    if hasattr(panel, "shutdown"):
                        panel.shutdown()
                    panel.close()
                    panel.deleteLater()
                settle(app, 0.2)
        finally:
            scene.host.resume_ingestion()
            scene.host.shutdown(wait=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
