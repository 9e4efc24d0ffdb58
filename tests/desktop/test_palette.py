"""Issue 33 (11): the whole palette switches at once, and every text reads at 4.5:1 or
more on its background, in both palettes: the palettes' own pairs, the status tones
and banners, and what a banner, a job card's "Done", an error line and the tray menu
actually draw after a live switch (their pixels, grabbed)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from desktop.qt import QApplication, QColor, QPalette

pytestmark = pytest.mark.gui

MIN_CONTRAST = 4.5
ROLE = QPalette.ColorRole
# (text role, background role) pairs the app draws text with
PAIRS = [("WindowText", "Window"), ("Text", "Base"), ("Text", "AlternateBase"),
         ("ButtonText", "Button"), ("PlaceholderText", "Window"), ("PlaceholderText", "Base"),
         ("HighlightedText", "Highlight"), ("ToolTipText", "ToolTipBase"), ("Link", "Base"),
         ("Link", "Window")]


def luminance(colour: QColor) -> float:
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return (0.2126 * channel(colour.red()) + 0.7152 * channel(colour.green())
            + 0.0722 * channel(colour.blue()))


def contrast(a: QColor, b: QColor) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def over(fg: QColor, bg: QColor) -> QColor:
    """``fg`` as drawn over ``bg`` (a half-transparent placeholder text is lighter)."""
    a = fg.alphaF()
    return QColor(round(fg.red() * a + bg.red() * (1 - a)),
                  round(fg.green() * a + bg.green() * (1 - a)),
                  round(fg.blue() * a + bg.blue() * (1 - a)))


@pytest.mark.parametrize("tone", ["light", "dark"])
def test_palette_pairs_read(tone: str) -> None:
    from desktop.appearance import dark_palette, light_palette

    palette = dark_palette() if tone == "dark" else light_palette()
    low = {}
    for fg_role, bg_role in PAIRS:
        bg = palette.color(getattr(ROLE, bg_role))
        fg = over(palette.color(getattr(ROLE, fg_role)), bg)
        low[(fg_role, bg_role)] = round(contrast(fg, bg), 2)
    assert all(v >= MIN_CONTRAST for v in low.values()), low


@pytest.mark.parametrize("tone", ["light", "dark"])
def test_status_tones_and_banners_read(tone: str) -> None:
    from desktop.appearance import BANNERS, TONES, dark_palette, light_palette

    dark = tone == "dark"
    palette = dark_palette() if dark else light_palette()
    for name, (light_colour, dark_colour) in TONES.items():
        for bg_role in ("Window", "Base", "AlternateBase"):
            ratio = contrast(QColor(dark_colour if dark else light_colour),
                             palette.color(getattr(ROLE, bg_role)))
            assert ratio >= MIN_CONTRAST, (name, bg_role, ratio)
    for kind, (lbg, lfg, dbg, dfg) in BANNERS.items():
        bg, fg = (dbg, dfg) if dark else (lbg, lfg)
        assert contrast(QColor(fg), QColor(bg)) >= MIN_CONTRAST, kind


def drawn(widget: Any) -> tuple[QColor, QColor]:
    """(background, text) as ``widget`` draws itself: the commonest pixel, and the pixel
    that differs most from it."""
    image = widget.grab().toImage()
    pixels = Counter(image.pixel(x, y) for x in range(0, image.width(), 1)
                     for y in range(0, image.height(), 1))
    bg = QColor.fromRgb(pixels.most_common(1)[0][0])
    text = max((QColor.fromRgb(p) for p in pixels), key=lambda c: contrast(c, bg))
    return bg, text


@pytest.fixture
def appearance(qapp: Any) -> Iterator[Any]:
    from desktop.appearance import Appearance

    palette, style = QPalette(qapp.palette()), qapp.style().name()
    look = Appearance(qapp, "light")
    yield look
    qapp.setPalette(palette)
    qapp.setStyle(style)


def test_a_live_switch_repaints_everything_at_once(qtbot: Any, appearance: Any) -> None:
    from desktop.dialogs.checked import CheckedDialog
    from desktop.panels.jobcard import JobCard
    from desktop.qt import QMenu, QVBoxLayout, QWidget
    from desktop.widgets import Banner
    from engine import JobSnapshot

    window = QWidget()
    qtbot.addWidget(window)
    col = QVBoxLayout(window)
    banner = Banner(window)
    job = JobSnapshot(id="j1", kind="paths", state="done", created=time.time() - 5,
                      started=time.time() - 5, finished=time.time(), files_total=3,
                      files_done=3, chunks=9, inputs=("/home/me/notes",))
    card = JobCard(dataclasses.replace(job), lambda _id: None)
    dialog = CheckedDialog(window)  # its error line, as every key dialog shows one
    error = dialog.error
    for w in (banner, card):
        col.addWidget(w)
    window.resize(700, 300)
    window.show()
    qtbot.waitExposed(window)
    banner.show_message("ok", "notes: 3 files ingested, 9 chunks.")
    QVBoxLayout(dialog).addWidget(error)  # the layout belongs to the dialog
    dialog.show()
    dialog.show_error("The two new passphrases differ.")
    menu = QMenu()  # as the tray's: a top-level widget of its own
    menu.addAction("Open ctx")
    assert card.state.text() == "Done"

    for tone in ("dark", "light", "dark"):
        appearance.apply(tone)
        QApplication.processEvents()
        window_bg = QApplication.palette().color(ROLE.Window)
        for name, widget in (("banner", banner), ("Done", card.state), ("error", error)):
            bg, text = drawn(widget)
            ratio = contrast(text, bg)
            assert ratio >= MIN_CONTRAST, (tone, name, round(ratio, 2))
            assert (bg.lightness() < 128) == (tone == "dark"), (tone, name, bg.name())
        assert (drawn(card.state)[0].lightness() < 128) == (window_bg.lightness() < 128)
        menu_bg, menu_text = drawn(menu)
        assert (menu_bg.lightness() < 128) == (tone == "dark"), (tone, menu_bg.name())
        assert contrast(menu_text, menu_bg) >= MIN_CONTRAST
