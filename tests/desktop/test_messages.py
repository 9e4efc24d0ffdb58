"""Issue 33 (9): one message catalogue in the user's words (desktop/messages.py): no error
code, stable name or config key on screen, no program's exception class, and every
sentence starts upper-case; the app's visible texts are scanned for them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop.messages import (
    REASONS,
    SAY,
    SETTING_NAMES,
    WHAT_TO_DO,
    describe,
    error_text,
    in_user_words,
)
from engine import ErrorInfo
from tests.desktop.cells import cell

pytestmark = pytest.mark.gui

# What must never reach a person: an error's stable name or code in brackets, a config
# key (dotted, or a bare snake_case word), an exception class.
SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")
DOTTED_KEY = re.compile(r"\b(?:" + "|".join(sorted({k.split(".")[0] for k in SETTING_NAMES}
                                                     | {"search", "ingest", "ipc"}))
                        + r")\.[a-z_]+\b")
CLASS = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
CODE = re.compile(r"\(\d{4}\)|\((?:[a-z]+_)+[a-z]+\)")


def problems(text: str) -> list[str]:
    """What in ``text`` is a code, key or class rather than words (paths are left alone)."""
    words = " ".join(w for w in text.split() if "/" not in w and "\\" not in w)
    found = [m.group(0) for m in (*SNAKE.finditer(words), *DOTTED_KEY.finditer(words),
                                  *CLASS.finditer(words), *CODE.finditer(words))]
    return found


def starts_lower(text: str) -> bool:
    if text.startswith("ctx ") or " " not in text.strip():  # ctx's name; a single name
        return False  # (a model, an endpoint, a file) is not a sentence
    first = text.strip()[:1]
    return first.isalpha() and first.islower()


ENGINE_MESSAGES = {  # what the engine says, as it says it (observed at open, issue 33)
    "config_invalid": ("tiers: need 0 <= recent_days <= old_days", {"key": "tiers.recent_days"}),
    "vector_store_unavailable": ("vector store (http) not reachable: ValueError", {}),
    "wrong_key": ("the passphrase does not open this store (wrong_key)", {}),
    "backup_damaged": ("the backup is damaged: its vault is not an encrypted vault", {}),
}


@pytest.mark.parametrize("name", sorted(set(WHAT_TO_DO) | set(ENGINE_MESSAGES)))
def test_every_error_is_told_in_words(name: str) -> None:
    message, details = ENGINE_MESSAGES.get(name, (f"{name.replace('_', ' ')} happened", {}))
    error = ErrorInfo(1000, name, message, details)
    for text in (describe("open", error), describe("ingest", error), error_text(error),
                 error_text(error.to_dict())):
        assert not problems(text), (name, text)
        assert not starts_lower(text), text
        assert name not in text


def test_a_setting_is_named_as_settings_shows_it() -> None:
    text = in_user_words("tiers.recent_days: expected a number")
    assert text == "\u201cFull text up to (days old)\u201d: expected a number"
    assert "ValueError" not in describe("open", ErrorInfo(
        1040, "vector_store_unavailable", "vector store (http) not reachable: ValueError", {}))
    assert "keyword search still works" not in describe("open", ErrorInfo(
        1040, "vector_store_unavailable", "x", {})).lower()  # at open nothing works yet
    assert set(SAY) <= set(WHAT_TO_DO)
    assert all(r[:1].isupper() for r in REASONS.values())


def _texts(root: Any) -> Iterator[tuple[str, str]]:
    """(where, text) for everything a person can read in ``root`` and its children."""
    from PySide6.QtWidgets import QAbstractButton

    from desktop.qt import (
        QComboBox,
        QGroupBox,
        QLabel,
        QLineEdit,
        QTableWidget,
        QTabWidget,
        QWidget,
    )
    from desktop.widgets import Banner

    for w in [root, *root.findChildren(QWidget)]:
        name = type(w).__name__
        if isinstance(w, Banner):
            yield name, w.text_shown()
        elif isinstance(w, QLabel):
            yield name, w.text()
        if isinstance(w, QAbstractButton):
            yield name, w.text()
        if isinstance(w, QGroupBox):
            yield name, w.title()
        if isinstance(w, QLineEdit):
            yield name, w.placeholderText()
        if isinstance(w, QComboBox):
            for i in range(w.count()):
                yield name, w.itemText(i)
        if isinstance(w, QTabWidget):
            for i in range(w.count()):
                yield name, w.tabText(i)
        if isinstance(w, QTableWidget):
            for c in range(w.columnCount()):
                header = w.horizontalHeaderItem(c)
                if header is not None:
                    yield name, header.text()
        if w.toolTip():
            yield name + ".toolTip", w.toolTip()


def _assert_in_words(root: Any) -> None:
    bad = [(where, text) for where, text in _texts(root) if text and problems(text)]
    lower = [(where, text) for where, text in _texts(root)
             if text and starts_lower(text) and not where.startswith("QLineEdit")]
    assert not bad, bad
    assert not lower, lower


def test_the_windows_texts_are_in_words(host: Any, qtbot: Any) -> None:
    from desktop.main_window import MainWindow

    window = MainWindow(host)
    qtbot.addWidget(window)
    window.build_panels()
    window.show()
    _assert_in_words(window)


@pytest.mark.parametrize("config", [
    '[tiers]\nrecent_days = -3\n',
    '[store]\nvector_backend = "http"\nchroma_url = "http://127.0.0.1:9"\n',
    '[store]\nvector_backend = "http"\nchroma_url = "chroma.local:80oo"\n',
])
def test_the_bad_setting_page_is_in_words(make_host: Any, qtbot: Any, data_dir: Path,
                                          config: str) -> None:
    from desktop.main_window import MainWindow
    from tests.desktop.conftest import open_fake_engine

    open_fake_engine(data_dir, None).close()
    (data_dir / "config.toml").write_text(config, encoding="utf-8")
    host = make_host(None)
    window = MainWindow(host)
    qtbot.addWidget(window)
    with qtbot.waitSignal(host.state_changed, check_params_cb=lambda s: s == "error",
                          timeout=30000):
        host.start()
    window.page.show_settings()
    _assert_in_words(window)


def test_the_tray_and_the_health_audit_are_in_words(host: Any, qtbot: Any) -> None:
    """The tray's menu and tooltip, and the Health panel once the audit log has rows
    (its operations were method names: build_context, ingest_job)."""
    from desktop.panels.health import HealthPanel
    from desktop.tray import Tray
    from ipc.discovery import find_live
    from ipc.remote import RemoteEngine

    tray = Tray(host)
    for text in [a.text() for a in tray.menu.actions()]:
        assert not problems(text) and not starts_lower(text), text
    assert not problems(tray.tooltip())  # "ctx: ready", "ctx: locked. Open ctx and..."
    panel = HealthPanel(host)
    qtbot.addWidget(panel)
    panel.resize(1100, 720)
    panel.show()
    info = find_live(host.data_dir)
    assert info is not None
    with (qtbot.waitSignal(host.build_finished, timeout=30000),
          RemoteEngine(info, timeout=20) as remote):  # an audited call from a process
        remote.build_context("tides", budget=300)
    qtbot.waitUntil(lambda: panel.audit.rowCount() >= 1, timeout=30000)
    operations = [cell(panel.audit, r, 1).text() for r in range(panel.audit.rowCount())]
    assert "Build context" in operations
    _assert_in_words(panel)
