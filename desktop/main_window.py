"""The main window: one tab per panel, a banner for errors and alerts, a status bar.

Panels are listed in :data:`PANELS` (title, module, class); each is built with
the host and reacts to the host's signals on its own (panels never call each
other). A panel module that is not there yet is left out; one that fails to
import is an error, not a silent gap.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from desktop.icons import app_icon
from desktop.messages import WHAT_TO_DO, describe
from desktop.qt import (
    QCloseEvent,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QStackedWidget,
    Qt,
    QTabWidget,
    QTimer,
    QVBoxLayout,
    QWidget,
    Signal,
)

# (tab title, module, class): the registry of panels, in tab order.
PANELS: list[tuple[str, str, str]] = [
    ("Ingestion", "desktop.panels.ingestion", "IngestionPanel"),
    ("Sources", "desktop.panels.sources", "SourcesPanel"),
    ("Retrieved items", "desktop.panels.retrieved", "RetrievedPanel"),
    ("Budget usage", "desktop.panels.budget", "BudgetPanel"),
    ("Health", "desktop.panels.health", "HealthPanel"),
    ("Settings", "desktop.panels.settings", "SettingsPanel"),
    ("Security", "desktop.panels.security", "SecurityPanel"),
]

STATE_DETAIL = {
    "starting": "Unlocking the key, opening the encrypted store and loading the model.",
    "opening": "Unlocking the key, opening the encrypted store and loading the model.",
    "needs_setup": "Choose how the store is protected to begin.",
    "locked": "Its passphrase is needed to open it; nothing is read until then.",
}
STATE_TEXT = {
    "starting": "Opening the store...", "opening": "Opening the store...",
    "needs_setup": "ctx is not set up yet.", "locked": "The store is locked.",
    "error": "The store could not be opened.", "stopping": "Closing...",
    "stopped": "Stopped.", "ready": "Ready.",
}


def panel_classes() -> list[tuple[str, type]]:
    """The registry's panels whose modules exist (an import error is raised, not hidden)."""
    out = []
    for title, module, name in PANELS:
        if importlib.util.find_spec(module) is None:
            continue
        out.append((title, getattr(importlib.import_module(module), name)))
    return out


class Banner(QWidget):
    """A one-line message (info or error) with a dismiss button; colours follow the palette."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.action = QPushButton()
        self.action.hide()
        self.close_button = QPushButton("Dismiss")
        self.close_button.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.label, 1)
        row.addWidget(self.action)
        row.addWidget(self.close_button)
        self.level = ""
        self._slot: Callable[[], None] | None = None
        self.action.clicked.connect(self._act)
        self.setAutoFillBackground(True)
        self.hide()

    def show_message(self, text: str, level: str = "error", action: str = "",
                     slot: Callable[[], None] | None = None) -> None:
        self.level = level
        dark = self.palette().window().color().lightness() < 128
        colors = {"error": ("#FCE8E6", "#8A1C12", "#4A1F1C", "#F6C1BB"),
                  "info": ("#E8F0FE", "#0B3D91", "#1E2A3D", "#C9DAF8")}[level]
        bg, fg = (colors[2], colors[3]) if dark else (colors[0], colors[1])
        self.setStyleSheet(f"Banner {{ background: {bg}; }} QLabel {{ color: {fg}; }}")
        self.label.setText(text)
        self._slot = slot
        self.action.setText(action)
        self.action.setVisible(bool(action and slot))
        self.show()

    def _act(self) -> None:
        if self._slot is not None:
            self._slot()


class MainWindow(QMainWindow):
    """Tabs of panels over the host. ``quit_on_close``: no tray, so closing quits."""

    unlock_requested = Signal()
    setup_requested = Signal()
    quit_requested = Signal()

    def __init__(self, host: Any, *, quit_on_close: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.quit_on_close = quit_on_close
        self.setWindowTitle("ctx")
        self.setWindowIcon(app_icon())
        self.resize(1100, 720)
        self.banner = Banner()
        self.tabs = QTabWidget()
        self.panels: dict[str, QWidget] = {}
        self.waiting = self._waiting_page()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.waiting)
        self.stack.addWidget(self.tabs)
        central = QWidget()
        col = QVBoxLayout(central)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.banner)
        col.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        if importlib.util.find_spec("desktop.panels.drop") is not None:
            from desktop.panels.drop import install_file_drop

            install_file_drop(self, self.ingest)
        host.state_changed.connect(self._state_changed)
        host.failed.connect(self.show_failure)
        host.alert.connect(self.show_alert)
        self._stats_timer = QTimer(self)
        self._stats_timer.setInterval(2000)
        self._stats_timer.timeout.connect(self._update_status)
        self._stats_timer.start()
        self._state_changed(host.state)

    def build_panels(self) -> None:
        """Create the panels (once): when the engine is ready, so the window shows first."""
        if self.panels:
            return
        for title, cls in panel_classes():
            panel = cls(self.host)
            self.panels[title] = panel
            self.tabs.addTab(panel, title)

    def _waiting_page(self) -> QWidget:
        page = QWidget()
        col = QVBoxLayout(page)
        col.addStretch(1)
        self.waiting_label = QLabel()
        self.waiting_label.setWordWrap(True)
        font = self.waiting_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        self.waiting_label.setFont(font)
        self.waiting_button = QPushButton()
        self.waiting_button.clicked.connect(self._waiting_clicked)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.waiting_label)
        row.addWidget(self.waiting_button)
        row.addStretch(1)
        col.addLayout(row)
        self.waiting_detail = QLabel()
        self.waiting_detail.setWordWrap(True)
        self.waiting_detail.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        col.addWidget(self.waiting_detail)
        col.addStretch(2)
        return page

    def ingest(self, paths: list[str]) -> None:
        """Ingest files and folders the way a drop on the window does (the Ingestion
        panel's path, which reports missing paths), or through the host before it exists."""
        if not paths:
            return
        ingest: Callable[[list[str]], Any] = getattr(self.panels.get("Ingestion"),
                                                     "accept_drop", self.host.ingest_paths)
        ingest(list(paths))

    def show_failure(self, operation: str, error: dict[str, Any]) -> None:
        text = describe(operation, error)
        if operation in ("open", "create_store"):
            self.waiting_detail.setText(text)
        self.banner.show_message(text, "error")

    def show_alert(self, alert: dict[str, Any]) -> None:
        if alert.get("name") in ("key_unavailable", "wrong_key", "store_locked"):
            return  # the waiting page says it, with the button to act on it
        hint = WHAT_TO_DO.get(str(alert.get("name", "")), "")
        text = str(alert.get("message", "")).rstrip(".")
        self.banner.show_message(f"{text}. {hint}".strip(), "error")

    def _state_changed(self, state: str) -> None:
        ready = state == "ready"
        if ready:
            self.build_panels()
        self.stack.setCurrentWidget(self.tabs if ready else self.waiting)
        self.waiting_label.setText(STATE_TEXT.get(state, state))
        if state != "error":
            self.waiting_detail.setText(STATE_DETAIL.get(state, ""))
        button = {"locked": "Unlock...", "needs_setup": "Set up...", "error": "Quit"}.get(state)
        self.waiting_button.setText(button or "")
        self.waiting_button.setVisible(button is not None)
        if ready and self.banner.level == "error" and "store" in self.banner.label.text():
            self.banner.hide()
        self._update_status()

    def _waiting_clicked(self) -> None:
        state = self.host.state
        if state == "locked":
            self.unlock_requested.emit()
        elif state == "needs_setup":
            self.setup_requested.emit()
        else:
            self.quit_requested.emit()

    def _update_status(self) -> None:
        text = STATE_TEXT.get(self.host.state, self.host.state)
        stats = self.host.server_stats()
        if stats.get("running"):
            text += f"  IPC: {stats.get('endpoint')}  requests served: " \
                    f"{stats.get('requests_served', 0)}"
        self.status_label.setText(text)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.quit_on_close:
            event.ignore()
            self.quit_requested.emit()
        else:
            event.accept()  # only hides: the tray keeps the app
