"""The page the main window shows while the store is not open: what is happening, or what
is wrong and the way out.

Opening and loading the model are a phase with a busy bar, not a wait in silence.
A locked store or one not set up yet is calm, with the one button that acts. A
store that could not be opened says why once, with what to do; when a setting is
the cause (the config's own check refused it, or a model that does not match),
the page offers Settings (the form, right here) and a reset of that setting, and
opens again after either.
"""

from __future__ import annotations

from typing import Any

from desktop import config_io
from desktop.appearance import paint_tone
from desktop.messages import describe, setting_name
from desktop.qt import (
    QHBoxLayout,
    QKeySequence,
    QLabel,
    QProgressBar,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
)
from engine import CtxError, ErrorInfo

TITLES = {
    "starting": "Opening the store...", "opening": "Opening the store...",
    "loading": "Loading the embedding model...", "needs_setup": "ctx is not set up yet.",
    "locked": "The store is locked.", "error": "The store could not be opened.",
    "stopping": "Closing...", "stopped": "Stopped.", "ready": "Ready.",
}
DETAILS = {
    "starting": "Unlocking the key and opening the encrypted store.",
    "opening": "Unlocking the key and opening the encrypted store.",
    "loading": "The store is open. Searches and ingestion run once the model is loaded: "
               "a few seconds, longer while the computer is busy.",
    "needs_setup": "Choose how the store is protected to begin.",
    "locked": "Its passphrase (or its recovery key) is needed to open it; nothing is read "
              "until then.",
}
DETAIL_WIDTH = 620  # px: about 90 characters a line, a comfortable measure
BUSY = ("starting", "opening", "loading", "stopping")
# Errors at open whose cause is a setting, and that setting (config_invalid names its own).
# (A Chroma server that cannot be reached is the vector backend setting's to fix, or to
# reset to the default, which rebuilds the vectors from the vault.)
SETTING_OF_ERROR = {"model_mismatch": "embedding.model",
                    "vector_store_unavailable": "store.vector_backend"}


def reset_text(key: str | None) -> str:
    """The reset button's words for the setting at fault (its name, never its key)."""
    if key == "store.vector_backend":
        return "Use the default vector store"
    return f"Reset \u201c{setting_name(key)}\u201d" if key else "Reset all settings"


def setting_at_fault(error: ErrorInfo | None) -> tuple[bool, str | None]:
    """(a setting is the cause, its dotted key or None when the whole file is)."""
    if error is None:
        return False, None
    if error.name == "config_invalid":
        key = error.details.get("key")
        return True, str(key) if isinstance(key, str) and key else None
    if error.name in SETTING_OF_ERROR:
        return True, SETTING_OF_ERROR[error.name]
    return False, None


class StatePage(QWidget):
    """The not-open page, driven by the host's state (see the module docstring)."""

    unlock_requested = Signal()
    setup_requested = Signal()
    quit_requested = Signal()

    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.title = QLabel()
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        self.title.setFont(font)
        self.title.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setTextVisible(False)
        self.busy.setMaximumWidth(320)
        self.act = QPushButton()  # Unlock... / Set up...
        self.settings_button = QPushButton("Settings...")
        self.reset_button = QPushButton()
        self.retry_button = QPushButton("Try again")
        self.quit_button = QPushButton("Quit")
        # Keys for each way out (Alt+ the underlined letter's equivalent), for the keyboard.
        for button, keys in ((self.settings_button, "Alt+S"), (self.reset_button, "Alt+R"),
                             (self.retry_button, "Alt+T"), (self.quit_button, "Alt+Q")):
            button.setShortcut(QKeySequence(keys))
        self.act.clicked.connect(self._act)
        self.settings_button.clicked.connect(self.show_settings)
        self.reset_button.clicked.connect(self.reset_setting)
        self.retry_button.clicked.connect(self._retry)
        self.quit_button.clicked.connect(self.quit_requested)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in (self.act, self.settings_button, self.reset_button, self.retry_button,
                       self.quit_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        bar = QHBoxLayout()
        bar.addStretch(1)
        bar.addWidget(self.busy)
        bar.addStretch(1)
        self.settings: Any = None  # the Settings panel, made when asked for
        self.settings_box = QVBoxLayout()
        col = QVBoxLayout(self)
        col.addStretch(1)
        col.addWidget(self.title)
        detail_row = QHBoxLayout()  # a readable measure, centred, however wide the window
        detail_row.addStretch(1)
        detail_row.addWidget(self.detail, 0)
        detail_row.addStretch(1)
        col.addLayout(detail_row)
        col.addLayout(bar)
        col.addLayout(buttons)
        col.addLayout(self.settings_box, 6)
        col.addStretch(2)
        self.col = col
        self.reset_key: str | None = None
        host.state_changed.connect(self.refresh)
        self.refresh()

    def refresh(self, *_: Any) -> None:
        state = self.host.state
        error = self.host.open_error if state == "error" else None
        self.title.setText(TITLES.get(state, ""))
        paint_tone(self.title, "error" if state == "error" else "")
        text = describe("open", error) if error is not None else DETAILS.get(state, "")
        at_fault, key = setting_at_fault(error)
        if error is not None and error.name == "config_invalid" \
                and _file_is_fine(self.host.data_dir):
            text += " config.toml itself is fine: the value comes from the environment " \
                    "(a CTX_ variable), so change it there."
            at_fault = False
        self.detail.setText(text)
        self.busy.setVisible(state in BUSY)
        action = {"locked": "Unlock...", "needs_setup": "Set up..."}.get(state)
        self.act.setText(action or "")
        self.act.setVisible(action is not None)
        self.reset_key = key
        self.settings_button.setVisible(at_fault)
        self.reset_button.setVisible(at_fault)
        self.reset_button.setText(reset_text(key))
        # room for the whole text (a quote mark drawn from a fallback font is wider)
        self.reset_button.setMinimumWidth(
            self.reset_button.fontMetrics().horizontalAdvance(reset_text(key) + "  ") + 16)
        self.reset_button.setToolTip(
            f"Put \u201c{setting_name(key)}\u201d back to its default and open again (Alt+R)"
            if key else "Set config.toml aside (kept, renamed) and open again with the "
            "defaults (Alt+R)")
        self.retry_button.setVisible(state == "error")
        self.quit_button.setVisible(state == "error")
        if state == "error":  # the keyboard starts on the way out (Tab: the reset)
            (self.settings_button if at_fault else self.retry_button).setFocus()
        if state != "error" and self.settings is not None:
            self.settings.hide()
            self._make_room(False)

    def resizeEvent(self, event: Any) -> None:
        # A wrapped label takes the width it is given: give it a readable measure.
        self.detail.setFixedWidth(max(200, min(DETAIL_WIDTH, self.width() - 40)))
        super().resizeEvent(event)

    def _act(self) -> None:
        if self.host.state == "locked":
            self.unlock_requested.emit()
        elif self.host.state == "needs_setup":
            self.setup_requested.emit()

    def _retry(self) -> None:
        self.host.start()

    def show_settings(self) -> None:
        """The Settings form, here: saving it opens the store again."""
        if self.settings is None:
            from desktop.panels.settings import SettingsPanel

            self.settings = SettingsPanel(self.host)
            self.settings.saved.connect(self._retry)
            self.settings_box.addWidget(self.settings)
        self.settings.load()
        self.settings.show()
        self._make_room(True)

    def _make_room(self, settings: bool) -> None:
        """With the form shown, it takes all the height the page has (the centring
        space above and below goes), so it opens whole, not in a strip."""
        last = self.col.count() - 1
        self.col.setStretch(0, 0 if settings else 1)
        self.col.setStretch(last, 0 if settings else 2)
        self.col.setStretch(last - 1, 1 if settings else 6)

    def reset_setting(self) -> None:
        """Put the setting at fault back to its default (or set the file aside), then open."""
        try:
            kept = config_io.without_key(self.host.data_dir, self.reset_key)
        except (CtxError, OSError) as exc:
            self.detail.setText(f"config.toml could not be changed: {exc}")
            return
        if kept is not None:
            self.detail.setText(f"config.toml was set aside as {kept.name}.")
        self.host.start()


def _file_is_fine(data_dir: Any) -> bool:
    """config.toml passes the check by itself (so the environment holds the bad value)."""
    try:
        config_io.read(data_dir)
    except CtxError:
        return False
    return True
