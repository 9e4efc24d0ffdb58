"""State icons drawn with QPainter (no image files): idle, ingesting (percent), attention,
paused, locked, starting, and the app icon.

Each look differs in shape as well as colour, so that it reads in a monochrome
tray and for colour-blind users: idle is a plain disc, ingesting a progress ring
(its digits only at 32 px and up: at a tray's 16-24 px the arc alone says how far,
digits there were unreadable), attention a disc with "!", paused a disc with two bars, locked
a disc with a padlock, starting a disc with three dots.
"""

from __future__ import annotations

import functools

from desktop.qt import QColor, QFont, QIcon, QPainter, QPen, QPixmap, QRectF, Qt

TRAY_STATES = ("idle", "ingesting", "attention", "paused", "locked", "starting")

COLORS = {
    "idle": "#2563EB",       # blue
    "ingesting": "#0E9F6E",  # green
    "attention": "#DC2626",  # red
    "paused": "#6B7280",     # grey
    "locked": "#B45309",     # amber: needs the passphrase, nothing is wrong
    "starting": "#6B7280",
}
SIZES = (16, 22, 24, 32, 48, 64, 128)
DIGITS_FROM = 32  # px: the ingesting ring shows its percent in digits from this size up


def _disc(p: QPainter, size: int, color: str) -> QRectF:
    m = size * 0.06
    rect = QRectF(m, m, size - 2 * m, size - 2 * m)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(color))
    p.drawEllipse(rect)
    return rect


def _text(p: QPainter, rect: QRectF, text: str, scale: float) -> None:
    font = QFont()
    font.setBold(True)
    font.setPixelSize(max(6, int(rect.height() * scale)))
    p.setFont(font)
    p.setPen(QColor("white"))
    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


def _padlock(p: QPainter, rect: QRectF) -> None:
    """A white padlock in the middle of ``rect``: a body and its shackle."""
    w, h = rect.width(), rect.height()
    body = QRectF(rect.center().x() - w * 0.22, rect.center().y() - h * 0.04, w * 0.44,
                  h * 0.32)
    p.setBrush(QColor("white"))
    p.drawRoundedRect(body, w * 0.05, w * 0.05)
    shackle = QRectF(body.center().x() - w * 0.14, body.top() - h * 0.24, w * 0.28, h * 0.4)
    pen = QPen(QColor("white"), max(1.5, w * 0.08))
    p.setPen(pen)
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawArc(shackle, 0, 180 * 16)
    p.setPen(Qt.PenStyle.NoPen)


def draw_state(size: int, state: str, percent: int | None = None) -> QPixmap:
    """One square pixmap of ``size`` pixels for a tray state."""
    if state not in TRAY_STATES:
        raise ValueError(f"unknown tray state {state!r}")
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    try:
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        color = COLORS[state]
        if state == "ingesting":
            m = size * 0.08
            ring = QRectF(m, m, size - 2 * m, size - 2 * m)
            width = max(2.0, size * (0.14 if size >= 32 else 0.2))
            inner = ring.adjusted(width / 2, width / 2, -width / 2, -width / 2)
            p.setPen(QPen(QColor(color).lighter(170), width))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(inner)
            pct = 0 if percent is None else max(0, min(100, int(percent)))
            p.setPen(QPen(QColor(color), width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.FlatCap))
            p.drawArc(inner, 90 * 16, -int(360 * 16 * max(pct, 3) / 100))
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(color))
            core = inner.adjusted(width * 0.7, width * 0.7, -width * 0.7, -width * 0.7)
            p.drawEllipse(core)
            if size >= DIGITS_FROM:
                _text(p, core, str(pct) if pct < 100 else "99", 0.55)
            return pix
        rect = _disc(p, size, color)
        if state == "attention":
            _text(p, rect, "!", 0.75)
        elif state == "paused":
            p.setBrush(QColor("white"))
            bar_w, bar_h = rect.width() * 0.14, rect.height() * 0.46
            cy = rect.center().y() - bar_h / 2
            for dx in (-0.13, 0.13):
                x = rect.center().x() + rect.width() * dx - bar_w / 2
                p.drawRoundedRect(QRectF(x, cy, bar_w, bar_h), bar_w / 3, bar_w / 3)
        elif state == "locked":
            _padlock(p, rect)
        elif state == "starting":
            p.setBrush(QColor("white"))
            r = rect.width() * 0.08
            for dx in (-0.22, 0.0, 0.22):
                c = rect.center()
                p.drawEllipse(QRectF(c.x() + rect.width() * dx - r, c.y() - r, 2 * r, 2 * r))
        else:  # idle: the app's mark
            _text(p, rect, "c", 0.8)
    finally:
        p.end()
    return pix


@functools.lru_cache(maxsize=128)
def state_icon(state: str, percent: int | None = None) -> QIcon:
    """A QIcon with every usual tray size drawn for ``state`` (cached: drawn once each)."""
    icon = QIcon()
    for size in SIZES:
        icon.addPixmap(draw_state(size, state, percent))
    return icon


def app_icon() -> QIcon:
    return state_icon("idle")
