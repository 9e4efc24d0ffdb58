"""Light, dark, or as the system says: the app's own palettes, applied to the Fusion style.

The app does not rely on a platform theme for dark mode (the GTK one is absent
from the bundle, and others differ by system): it sets the Fusion style and one
of two palettes of its own. "system" reads the desktop's colour scheme (Qt's
style hints: Windows, macOS, GNOME and KDE report it) and follows its changes;
where nothing is reported, light.

The whole palette switches at once: the status colours (a job's "Done", an error
line, a message banner) are painted through :func:`paint_tone`, which remembers the
tone on the widget, and :meth:`Appearance.apply` paints every such widget again in the
new palette's colours. Every text colour here reads at 4.5:1 or more on the
backgrounds it is drawn on, in both palettes (tests/desktop/test_palette.py).
"""

from __future__ import annotations

from typing import Any

from desktop.qt import QApplication, QColor, QGuiApplication, QObject, QPalette, Qt, QWidget

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


# Fusion's light palette, but for the two pairs below 4.5:1 there: the selection (white on
# #308CC6 is 3.7:1) and the placeholder, muted text (black at half opacity, 4.1:1).
_LIGHT = {"Highlight": "#2A6AAE", "PlaceholderText": "#5F6368", "Link": "#0B57D0"}

# Status colours: tone -> (text on the light palette, text on the dark palette).
TONES: dict[str, tuple[str, str]] = {
    "ok": ("#0D6B2E", "#7FD49A"), "warn": ("#8A5300", "#F2C36B"),
    "error": ("#B3261E", "#F2B8B5"), "info": ("#0B3D91", "#C9DAF8"),
}
# Message banners: kind -> (light background, light text, dark background, dark text).
BANNERS: dict[str, tuple[str, str, str, str]] = {
    "info": ("#E8F0FE", "#0B3D91", "#1E2A3D", "#C9DAF8"),
    "ok": ("#E6F4EA", "#0D5323", "#1B3324", "#B7E1C1"),
    "error": ("#FCE8E6", "#8A1C12", "#3D1E1C", "#F6C1BB"),
}
TONE_PROPERTY = "ctxTone"  # the tone a widget was painted in ("" for none)


def is_dark_palette(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def tone_colour(tone: str, dark: bool) -> str:
    light, dark_colour = TONES[tone]
    return dark_colour if dark else light


def tone_style(widget: QWidget, tone: str, *, dark: bool | None = None) -> str:
    """The style sheet of a widget painted in ``tone``: a banner's colours for
    "banner:<kind>", else bold text in the tone's colour; "" for none."""
    if not tone:
        return ""
    dark = is_dark_palette(QApplication.palette()) if dark is None else dark
    if tone.startswith("banner:"):
        bg, fg, dbg, dfg = BANNERS[tone.split(":", 1)[1]]
        bg, fg = (dbg, dfg) if dark else (bg, fg)
        pad = widget.property("ctxPadding") or "6px 8px"
        return (f"QLabel {{ background: {bg}; color: {fg}; padding: {pad};"
                f" border-radius: 4px; }}")
    return f"color: {tone_colour(tone, dark)}; font-weight: bold;"


def paint_tone(widget: QWidget, tone: str) -> None:
    """Paint ``widget`` in ``tone`` ("ok", "warn", "error", "info", "banner:<kind>" or ""
    for none), now and again whenever the palette switches."""
    widget.setProperty(TONE_PROPERTY, tone)
    widget.setStyleSheet(tone_style(widget, tone))


def repaint_tones(app: Any, dark: bool) -> None:
    """Paint every toned widget again in the palette now applied."""
    for widget in app.allWidgets():
        tone = widget.property(TONE_PROPERTY)
        if tone:
            widget.setStyleSheet(tone_style(widget, str(tone), dark=dark))


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
    palette = style.standardPalette() if style is not None else QPalette()
    for name, colour in _LIGHT.items():
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            palette.setColor(group, getattr(QPalette.ColorRole, name), QColor(colour))
    return palette


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
            palette = dark_palette() if tone == "dark" else light_palette()
            self.app.setPalette(palette)
            for widget in self.app.topLevelWidgets():  # menus and dialogs without a parent
                widget.setPalette(palette)
            repaint_tones(self.app, tone == "dark")
        return tone
