"""The tray icon: its look follows the host (idle, ingesting with percent, needs attention,
paused) and its menu offers the everyday actions.

The tray never calls the engine: pause, resume and sync go through the host
(which runs them on its pool); opening the window and picking files are asked
of the app through signals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from desktop.icons import state_icon
from desktop.qt import QAction, QMenu, QObject, QSystemTrayIcon, Signal
from engine import JobSnapshot

ATTENTION_STATES = ("needs_setup", "locked", "error")


def look_for(host_state: str, paused: bool, jobs: Mapping[str, JobSnapshot],
             attention: bool) -> tuple[str, int | None]:
    """The tray look (and percent while ingesting) for a host state and its jobs."""
    if attention or host_state in ATTENTION_STATES:
        return "attention", None
    if host_state in ("starting", "opening", "stopping"):
        return "starting", None
    active = [j for j in jobs.values() if not j.final]
    if paused:
        return "paused", None
    if active:
        total = sum(j.files_total for j in active)
        done = sum(j.files_done + j.files_skipped + j.files_unchanged for j in active)
        return "ingesting", (min(99, int(100 * done / total)) if total else 0)
    return "idle", None


class Tray(QObject):
    """QSystemTrayIcon with state icons and the menu: Open ctx, Ingest files..., Ingest
    folder..., Pause/Resume ingestion, Sync coding sessions now, Quit."""

    open_requested = Signal()
    ingest_files_requested = Signal()
    ingest_folder_requested = Signal()
    quit_requested = Signal()
    look_changed = Signal(str)

    def __init__(self, host: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.icon = QSystemTrayIcon(self)
        self.menu = QMenu()
        self.act_open = self._action("Open ctx", self.open_requested.emit)
        self.menu.addSeparator()
        self.act_files = self._action("Ingest files...", self.ingest_files_requested.emit)
        self.act_folder = self._action("Ingest folder...", self.ingest_folder_requested.emit)
        self.act_pause = self._action("Pause ingestion", self._toggle_pause)
        self.act_sync = self._action("Sync coding sessions now", self._sync)
        self.menu.addSeparator()
        self.act_quit = self._action("Quit", self.quit_requested.emit)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self.attention = False
        self.look = ""
        self.percent: int | None = None
        host.state_changed.connect(self.refresh)
        host.job_progress.connect(self.refresh)
        host.paused_changed.connect(self.refresh)
        host.alert.connect(self._alerted)
        self.refresh()

    def _action(self, text: str, slot: Any) -> QAction:
        act = QAction(text, self.menu)
        act.triggered.connect(slot)
        self.menu.addAction(act)
        return act

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def acknowledge(self) -> None:
        """The user has seen the window: the "needs attention" look clears."""
        if self.attention:
            self.attention = False
            self.refresh()

    def refresh(self, *_: Any) -> None:
        look, percent = look_for(self.host.state, self.host.ingestion_paused, self.host.jobs,
                                 self.attention)
        ready = self.host.engine_ready
        for act in (self.act_files, self.act_folder, self.act_pause, self.act_sync):
            act.setEnabled(ready)
        self.act_pause.setText("Resume ingestion" if self.host.ingestion_paused
                               else "Pause ingestion")
        if (look, percent) == (self.look, self.percent):
            return
        self.look, self.percent = look, percent
        self.icon.setIcon(state_icon(look, percent))
        self.icon.setToolTip(self.tooltip())
        self.look_changed.emit(look)

    def tooltip(self) -> str:
        words = {"idle": "ready", "starting": f"{self.host.state}...",
                 "paused": "ingestion paused", "attention": "needs attention"}
        if self.look == "ingesting":
            return f"ctx: ingesting, {self.percent or 0}%"
        if self.look == "attention" and self.host.state in ATTENTION_STATES:
            return f"ctx: needs attention ({self.host.state.replace('_', ' ')})"
        return f"ctx: {words.get(self.look, self.look)}"

    def _toggle_pause(self) -> None:
        if self.host.ingestion_paused:
            self.host.resume_ingestion()
        else:
            self.host.pause_ingestion()

    def _sync(self) -> None:
        self.host.sync_sessions()

    def _alerted(self, alert: dict[str, Any]) -> None:
        self.attention = True
        self.refresh()
        if self.icon.isVisible() and QSystemTrayIcon.supportsMessages():
            self.icon.showMessage("ctx", str(alert.get("message", "")),
                                  QSystemTrayIcon.MessageIcon.Warning, 8000)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger,
                      QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_requested.emit()
