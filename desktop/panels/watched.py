"""The Ingestion panel's watched-folders section: the folders the engine's config names
(``[ingest] watched_folders``), as the engine follows them.

The engine itself (``ContextEngine.watch``, the same in ``ctx serve``) ingests
changed files again and removes deleted ones; this section only shows which folders
are watched, which cannot be and why, and tells what a change did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop.messages import describe, plural
from desktop.qt import QListWidget, QVBoxLayout, QWidget
from desktop.widgets import heading, muted
from engine import WatchReport

Notify = Callable[[str, str], None]  # (banner kind, text)


class WatchedFolders(QWidget):
    def __init__(self, host: Any, notify: Notify, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self._notify = notify
        self.list = QListWidget()
        self.list.setMaximumHeight(110)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(heading("Watched folders"))
        box.addWidget(muted("Changed files are ingested again and deleted files leave the "
                            "store. Add or remove folders in Settings."))
        box.addWidget(self.list)
        self.report: WatchReport = getattr(host, "watch_report", WatchReport(()))
        host.watch_changed.connect(self.on_report)
        self._draw()

    def on_report(self, report: WatchReport) -> None:
        if report.error is not None:
            self._notify("error", describe("watched folders", report.error))
        elif report.removed:
            self._notify("info", f"{plural(report.removed, 'deleted file')} removed from "
                         "the store (watched folders).")
        elif report.job is None:
            self.report = report
            self._draw()

    def _draw(self) -> None:
        self.list.clear()
        folders = list(self.report.folders) + [f for f in self.report.problems
                                                if f not in self.report.folders]
        if not folders:
            self.list.addItem("No folder is watched.")
        for folder in folders:
            why = self.report.problems.get(folder)
            self.list.addItem(f"{folder}  —  {'not watched: ' + why if why else 'watching'}")
