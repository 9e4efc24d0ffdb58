"""The tray icon: its look and tooltip follow the host, and its menu offers the everyday
actions.

The look says what is true now, in order: locked; not set up (a first step:
starting's dots, not red); not opened (attention); opening or loading the model;
an engine alert that is active (attention, until the engine clears it); paused;
ingesting (the ring is the stage's share, the tooltip names the stage in the
engine's own description, JobSnapshot.progress, as ``ctx status`` and the job card
say it); a job that failed or skipped files and has not been seen
yet (attention, until the window is opened); else idle. The tooltip always names
the state and, for attention, the reason. A notice (a job's problem, an alert) is one balloon.

The tray never calls the engine: pause, resume and sync go through the host
(which runs them on its pool); opening the window and picking files are asked
of the app through signals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from desktop.icons import state_icon
from desktop.job_words import leading
from desktop.messages import ALERTS, JOB_ALERTS, job_title, plural
from desktop.notices import Notice
from desktop.qt import QAction, QMenu, QObject, QSystemTrayIcon, Signal
from engine import JobSnapshot
from ipc.status_text import progress_text

BUSY_WORDS = {"starting": "opening the store", "opening": "opening the store",
              "loading": "loading the model", "stopping": "closing"}


def look_for(host_state: str, paused: bool, jobs: Iterable[JobSnapshot],
             alerts: Mapping[str, str], unseen: Mapping[str, str],
             open_error: str = "") -> tuple[str, int | None, str]:
    """(look, percent while ingesting, tooltip) for the host's state, its jobs, the engine
    alerts active (name -> reason) and job problems not seen yet (job id -> reason)."""
    if host_state == "locked":
        return "locked", None, ("ctx: locked. Open ctx and enter the passphrase (or the "
                                "recovery key).")
    if host_state == "needs_setup":
        # a first step, not a failure: no red
        return "starting", None, "ctx: not set up yet. Open ctx to create the store."
    if host_state == "error":
        why = f": {open_error}" if open_error else ""
        return "attention", None, f"ctx: needs attention, the store could not be opened{why}"
    if host_state in BUSY_WORDS or host_state == "stopped":
        return "starting", None, f"ctx: {BUSY_WORDS.get(host_state, 'stopped')}..."
    if alerts:
        return "attention", None, "ctx: needs attention, " + "; ".join(alerts.values())
    active = [j for j in jobs if not j.final]
    if paused:
        if not active:
            return "paused", None, "ctx: ingestion paused"
        lead = leading(active)
        more = f" (and {plural(len(active) - 1, 'other job')})" if len(active) > 1 else ""
        words = progress_text(lead, time_left=False)
        return "paused", None, f"ctx: ingestion paused; {job_title(lead)}{more}: {words}"
    if active:
        lead = leading(active)
        progress = lead.progress
        percent = progress.percent if progress is not None and progress.percent else 0
        more = f" (and {plural(len(active) - 1, 'other job')})" if len(active) > 1 else ""
        return ("ingesting", percent,
                f"ctx: {job_title(lead)}{more}: {progress_text(lead)}")
    if unseen:
        return "attention", None, "ctx: needs attention, " + "; ".join(unseen.values())
    return "idle", None, "ctx: ready"


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
        self.unseen: dict[str, str] = {}  # job id -> its problem, until the window is seen
        self.look = ""
        self.percent: int | None = None
        self.tip = ""
        self.balloons: list[str] = []  # what was shown, newest last (status, tests)
        host.state_changed.connect(self.refresh)
        host.job_progress.connect(self.refresh)
        host.paused_changed.connect(self.refresh)
        host.alert.connect(self._noticed)
        host.alert_cleared.connect(self.refresh)
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
        """The person has seen the window: job problems no longer ask for attention."""
        if self.unseen:
            self.unseen.clear()
            self.refresh()

    def alert_reasons(self) -> dict[str, str]:
        """The engine alerts that ask for attention while active (name -> a few words)."""
        return {name: ALERTS[name][2] for name in self.host.active_alerts
                if name in ALERTS and name not in JOB_ALERTS}

    def refresh(self, *_: Any) -> None:
        host = self.host
        open_error = host.open_error.message if getattr(host, "open_error", None) else ""
        look, percent, tip = look_for(host.state, host.ingestion_paused, host.jobs.values(),
                                      self.alert_reasons(), self.unseen, open_error)
        ready = host.engine_open
        for act in (self.act_files, self.act_folder, self.act_pause, self.act_sync):
            act.setEnabled(ready)
        self.act_pause.setText("Resume ingestion" if host.ingestion_paused
                               else "Pause ingestion")
        if tip != self.tip:
            self.tip = tip
            self.icon.setToolTip(tip)
        if (look, percent) == (self.look, self.percent):
            return
        self.look, self.percent = look, percent
        self.icon.setIcon(state_icon(look, percent))
        self.look_changed.emit(look)

    def tooltip(self) -> str:
        return self.tip

    def _toggle_pause(self) -> None:
        if self.host.ingestion_paused:
            self.host.resume_ingestion()
        else:
            self.host.pause_ingestion()

    def _sync(self) -> None:
        self.host.sync_sessions()

    def _noticed(self, notice: Notice) -> None:
        if notice.job is not None:
            self.unseen[notice.job] = notice.message
        self.refresh()
        self.balloons.append(notice.message)
        if self.icon.isVisible() and QSystemTrayIcon.supportsMessages():
            self.icon.showMessage("ctx", notice.message, QSystemTrayIcon.MessageIcon.Warning,
                                  8000)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger,
                      QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_requested.emit()
