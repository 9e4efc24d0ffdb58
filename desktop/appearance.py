"""Light, dark, or as the system says: the app's own palettes, applied to the Fusion style.

The app does not rely on a platform theme for dark mode (the GTK one is absent
from the bundle, and others differ by system): it sets the Fusion style and one
of two palettes of its own. "system" reads the desktop's colour scheme (Qt's
style hints: Windows, macOS, GNOME and KDE report it) and follows its changes;
where nothing is reported, light.
"""

from __future__ import annotations

from desktop.qt import QApplication, QColor, QGuiApplication, QObject, QPalette, Qt

APPEARANCES = ("system", "light", "dark")

_DARK = {  # role -> colour; contrast of text on window 13:1, of links 8:1
    "Window": "#202124", "WindowText": "#E8EAED", "Base": "#17181A",
    "AlternateBase": "#26282C", "Text": "#E8EAED", "Button": "#2D2F33",
    "ButtonText": "#E8EAED", "Highlight": "#3B6FD8", "HighlightedText": "#FFFFFF",
    "ToolTipBase": "#2D2F33", "ToolTipText": "#E8EAED", "PlaceholderText": "#9AA0A6",
    "Link": "#8AB4F8", "LinkVisited": "#C58AF9", "BrightText": "#FF8A80", "Light": "#3C4043",
    "Midlight": "#34373B", "Mid": "#2A2C30", "Dark": "#121314", "Shadow": "#000000",
}
_DARK_DISABLED = {"WindowText": "#80868B", "Text": "#80868B", "ButtonText": "#80868B",
                  "Base": "#1C1D20", "Button": "#26282C", "Highlight": "#4A4D52"}


def dark_palette() -> QPalette:
    palette = QPalette()
    role = QPalette.ColorRole
    for name, colour in _DARK.items():
        palette.setColor(getattr(role, name), QColor(colour))
    for name, colour in _DARK_DISABLED.items():
        palette.setColor(QPalette.ColorGroup.Disabled, getattr(role, name), QColor(colour))
    return palette


def light_palette() -> QPalette:
    """Fusion's own light palette (the same on every system)."""
    from desktop.qt import QStyleFactory

    style = QStyleFactory.create("Fusion")
    return style.standardPalette() if style is not None else QPalette()


def system_is_dark() -> bool:
    """Whether the desktop asks for a dark colour scheme (False where it says nothing)."""
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    return bool(scheme is not None and scheme() == Qt.ColorScheme.Dark)


def resolved(appearance: str) -> str:
    """"light" or "dark" for a setting ("system" asks the desktop)."""
    if appearance == "system":
        return "dark" if system_is_dark() else "light"
    return "dark" if appearance == "dark" else "light"


class Appearance(QObject):
    """Keeps the application's palette as the setting says, following the system's
    changes while the setting is "system"."""

    def __init__(self, app: QApplication, appearance: str = "system") -> None:
        super().__init__(app)
        self.app = app
        self.setting = appearance
        self.tone = ""
        app.setStyle("Fusion")
        hints = QGuiApplication.styleHints()
        changed = getattr(hints, "colorSchemeChanged", None)
        if changed is not None:
            changed.connect(lambda *_: self.apply(self.setting))
        self.apply(appearance)

    def apply(self, appearance: str) -> str:
        """Set ``appearance`` ("system", "light", "dark"); the tone applied."""
        self.setting = appearance if appearance in APPEARANCES else "system"
        tone = resolved(self.setting)
        if tone != self.tone:
            self.tone = tone
            self.app.setPalette(dark_palette() if tone == "dark" else light_palette())
        return tone
