"""What a later launch may ask of the running app (show, ingest, pause, resume, quit,
status), answered on the GUI thread. A mixin of :class:`desktop.app.App`, whose state
it reads.
"""

from __future__ import annotations

import os
from typing import Any

from desktop.qt import QSystemTrayIcon, QTimer


class AppControl:
    """The single-instance socket's requests (the attributes are App's)."""

    host: Any
    tray: Any
    window: Any
    data_dir: Any
    quitting: bool
    finishing: bool
    appearance: Any
    pending_ingest: list[str]
    started_at: float
    shown_at: float | None
    ready_at: float | None
    show_window: Any
    ingest: Any
    quit: Any

    def handle_message(self, message: dict[str, Any]) -> dict[str, Any]:
        cmd = message.get("cmd")
        if cmd == "status":
            return {"ok": True, **self.status()}
        if self.quitting:  # the next launch waits for this one to be gone, then starts
            return {"ok": False, "stopping": True, "error": "ctx is quitting"}
        if cmd == "show":
            self.show_window()
            return {"ok": True}
        if cmd == "ingest":
            paths = message.get("paths")
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return {"ok": False, "error": "ingest takes a list of paths"}
            self.ingest(paths)
            return {"ok": True, "queued": not self.host.engine_ready}
        if cmd == "quit":
            QTimer.singleShot(0, lambda: self.quit(ask=False))
            return {"ok": True}
        if cmd in ("pause", "resume"):
            if not self.host.engine_open:
                return {"ok": False, "error": f"the store is not open ({self.host.state})"}
            (self.host.pause_ingestion if cmd == "pause" else self.host.resume_ingestion)()
            return {"ok": True}
        return {"ok": False, "error": "unknown command"}

    def status(self) -> dict[str, Any]:
        tray = self.tray
        jobs = self.host.jobs.values()
        return {
            "pid": os.getpid(), "state": self.host.state, "data_dir": str(self.data_dir),
            "ipc": self.host.ipc_info, "quitting": self.quitting, "finishing": self.finishing,
            "appearance": self.appearance.tone,
            "tray": {"available": QSystemTrayIcon.isSystemTrayAvailable(),
                     "used": tray is not None,
                     "visible": bool(tray is not None and tray.icon.isVisible()),
                     "look": tray.look if tray is not None else None,
                     "percent": tray.percent if tray is not None else None,
                     "tooltip": tray.tip if tray is not None else None,
                     "balloons": len(tray.balloons) if tray is not None else 0},
            "window": {"visible": bool(self.window is not None and self.window.isVisible()),
                       "title": self.window.windowTitle() if self.window is not None else None,
                       "page": self._page()},
            "jobs": {"total": len(self.host.jobs),
                     "active": sum(not j.final for j in jobs),
                     "pending": len(self.pending_ingest) + len(self.host.tasks.running()),
                     "done": sum(j.state == "done" for j in jobs),
                     "chunks": sum(j.chunks for j in jobs)},
            "server": {k: v for k, v in self.host.server_stats().items()
                       if k in ("running", "requests_served", "received")},
            "timings_ms": {k: round((v - self.started_at) * 1000, 1) for k, v in
                           (("shown", self.shown_at), ("ready", self.ready_at)) if v},
        }

    def _page(self) -> dict[str, Any] | None:
        """What the window's state page offers (None once the panels show)."""
        window = self.window
        if window is None or window.stack.currentWidget() is not window.page:
            return None
        page = window.page
        return {"title": page.title.text(), "detail": page.detail.text(),
                "buttons": [b.text() for b in (page.act, page.settings_button,
                                               page.reset_button, page.retry_button,
                                               page.quit_button) if not b.isHidden()]}
