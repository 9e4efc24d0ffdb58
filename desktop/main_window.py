"""The main window: one tab per panel, a message line that never moves the layout, and
the pages shown while the store is not open (opening, loading the model, locked, not
set up, could not be opened).

Panels are listed in :data:`PANELS` (title, module, class); each is built with
the host and reacts to the host's signals on its own (panels never call each
other). A panel module that is not there yet is left out; one that fails to
import is an error, not a silent gap. A store that cannot open because of a
setting offers, on its page, Settings and a reset of that setting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop.icons import app_icon
from desktop.messages import WHAT_TO_DO, describe
from desktop.notices import Failure, Notice
from desktop.pages import StatePage
from desktop.panels.budget import BudgetPanel
from desktop.panels.drop import install_file_drop
from desktop.panels.health import HealthPanel
from desktop.panels.ingestion import IngestionPanel
from desktop.panels.retrieved import RetrievedPanel
from desktop.panels.security import SecurityPanel
from desktop.panels.settings import SettingsPanel
from desktop.panels.sources import SourcesPanel
from desktop.qt import (
    QCloseEvent,
    QGuiApplication,
    QLabel,
    QMainWindow,
    QStackedWidget,
    QTabWidget,
    QTimer,
    QWidget,
    Signal,
)
from desktop.widgets import Banner

# (tab title, panel class): the panels, in tab order.
PANELS: list[tuple[str, type]] = [
    ("Ingestion", IngestionPanel),
    ("Sources", SourcesPanel),
    ("Retrieved items", RetrievedPanel),
    ("Budget usage", BudgetPanel),
    ("Health", HealthPanel),
    ("Settings", SettingsPanel),
    ("Security", SecurityPanel),
]

STATUS_TEXT = {
    "starting": "Opening the store...", "opening": "Opening the store...",
    "loading": "Loading the embedding model...", "needs_setup": "Not set up yet.",
    "locked": "Locked.", "error": "The store could not be opened.", "stopping": "Closing...",
    "stopped": "Stopped.", "ready": "Ready.",
}
# Failures the window's pages tell themselves (the state page, the unlock dialog).
PAGE_OPERATIONS = ("open", "create_store")
# The status line's request count: the IPC server's own counter, which no engine event
# announces (a search from a sibling process changes it and nothing else): read this often.
STATUS_REFRESH_MS = 5000


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
        self.tabs = QTabWidget()
        self.panels: dict[str, QWidget] = {}
        self.page = StatePage(host)
        self.page.unlock_requested.connect(self.unlock_requested)
        self.page.setup_requested.connect(self.setup_requested)
        self.page.quit_requested.connect(self.quit_requested)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.page)
        self.stack.addWidget(self.tabs)
        self.setCentralWidget(self.stack)
        # Messages live in the status bar: showing one never moves a control.
        self.banner = Banner(self, compact=True)
        self.statusBar().addWidget(self.banner, 1)
        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        install_file_drop(self, self.ingest)
        host.state_changed.connect(self._state_changed)
        host.failed.connect(self.show_failure)
        host.alert.connect(self.show_alert)
        host.alert_cleared.connect(self._alert_cleared)
        host.build_finished.connect(lambda _build: self._update_status())
        self._stats_timer = QTimer(self)
        self._stats_timer.setInterval(STATUS_REFRESH_MS)
        self._stats_timer.timeout.connect(self._update_status)
        self._stats_timer.start()
        self._banner_alert: str | None = None
        self._placed = False  # put in the middle of the screen when first shown
        self._state_changed(host.state)

    def build_panels(self) -> None:
        """Create the panels (once): when the engine is ready, so the window shows first."""
        if self.panels:
            return
        for title, cls in PANELS:
            panel = cls(self.host)
            self.panels[title] = panel
            self.tabs.addTab(panel, title)

    def ingest(self, paths: list[str]) -> None:
        """Ingest files and folders the way a drop on the window does (the Ingestion
        panel's path, which reports missing paths), or through the host before it exists."""
        if not paths:
            return
        ingest: Callable[[list[str]], Any] = getattr(self.panels.get("Ingestion"),
                                                     "accept_drop", self.host.ingest_paths)
        ingest(list(paths))

    def show_failure(self, failure: Failure) -> None:
        if failure.operation in PAGE_OPERATIONS:
            return  # the state page (or the unlock dialog) says it, with what to do
        self._banner_alert = None
        self.banner.show_message("error", describe(failure.operation, failure.error))

    def show_alert(self, notice: Notice) -> None:
        if notice.job is not None:
            return  # the Ingestion panel tells a job's problems, on its card and banner
        hint = WHAT_TO_DO.get(notice.name, "")
        self._banner_alert = notice.alert
        self.banner.show_message("error", f"{notice.message.rstrip('.')}. {hint}".strip())

    def _alert_cleared(self, name: str) -> None:
        if self._banner_alert == name:
            self._banner_alert = None
            self.banner.clear_message()

    def _state_changed(self, state: str) -> None:
        ready = state == "ready"
        if ready:
            self.build_panels()
        self.stack.setCurrentWidget(self.tabs if ready else self.page)
        self._update_status()

    def _update_status(self) -> None:
        text = STATUS_TEXT.get(self.host.state, self.host.state)
        stats = self.host.server_stats()
        if stats.get("running"):
            text += f"  IPC: {stats.get('endpoint')}  requests served: " \
                    f"{stats.get('requests_served', 0)}"
        self.status_label.setText(text)

    def showEvent(self, event: Any) -> None:
        """Shown the first time: in the middle of the screen (not where a bare X server or
        a window manager that does not place windows puts it, +0+0). Later shows keep
        wherever the person moved it."""
        if not self._placed:
            self._placed = True
            screen = self.screen() or QGuiApplication.primaryScreen()
            if screen is not None:
                area = screen.availableGeometry()
                frame = self.frameGeometry()  # larger than the screen: its top left corner
                self.move(area.x() + max(0, (area.width() - frame.width()) // 2),
                          area.y() + max(0, (area.height() - frame.height()) // 2))
        super().showEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.quit_on_close:
            event.ignore()
            self.quit_requested.emit()
        else:
            event.accept()  # only hides: the tray keeps the app
