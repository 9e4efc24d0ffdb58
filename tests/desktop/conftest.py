"""Desktop tests: Qt offscreen, a real engine with the fake embedder, warnings fail tests.

``QT_QPA_PLATFORM`` must be set before pytest-qt creates the (session-wide)
QApplication, so it is set here at import time; Qt warnings fail a test through
``qt_log_level_fail = "WARNING"`` in pyproject.toml.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if not os.environ.get("XDG_RUNTIME_DIR"):  # Qt warns without a private one
    import atexit
    import shutil
    import tempfile

    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="ctx-qt-rt-")
    atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], True)  # none left in /tmp


def open_fake_engine(data_dir: Path, passphrase: str | None) -> Any:
    """The engine factory tests hand EngineHost: the real engine, fake embedder (CTX_EMBEDDER)."""
    from engine import ContextEngine

    return ContextEngine.open(data_dir, passphrase=passphrase)


class RecordingEngine:
    """Wraps an engine and records the thread of every attribute read or call on it."""

    def __init__(self, engine: Any, seen: list[tuple[str, threading.Thread]]) -> None:
        self._engine = engine
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        self._seen.append((name, threading.current_thread()))
        value = getattr(self._engine, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self._seen.append((name + "()", threading.current_thread()))
            return value(*args, **kwargs)
        return call


@pytest.fixture
def short_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short runtime dir: AF_UNIX paths (the ipc:// endpoint) are limited to ~100 bytes."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="ctxrt-"))
    path.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    monkeypatch.setenv("CTX_RUNTIME_DIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_host(qtbot: Any, data_dir: Path, short_runtime: Path) -> Iterator[Callable[..., Any]]:
    """Build EngineHosts on ``data_dir``; each is shut down (and waited for) at the end."""
    from desktop.host import EngineHost

    made: list[EngineHost] = []

    def make(factory: Callable[..., Any] | None = open_fake_engine, **kwargs: Any) -> EngineHost:
        host = EngineHost(data_dir, engine_factory=factory, **kwargs)
        made.append(host)
        return host

    yield make
    for host in made:
        host.shutdown(wait=True)


@pytest.fixture
def host(make_host: Callable[..., Any], qtbot: Any) -> Any:
    """A started host, ready."""
    h = make_host()
    with qtbot.waitSignal(h.ready, timeout=30000):
        h.start()
    return h


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nThe alpha router keeps a table of routes.\n"
                                     * 5, encoding="utf-8")
    (folder / "beta.txt").write_text("Beta notes about the packing of context budgets.\n" * 8,
                                     encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _gc_on_the_gui_thread() -> Iterator[None]:
    """As the app does (desktop.app.GuiGarbageCollector): no automatic garbage collection,
    which could run on an engine thread and free Qt objects there; collect here instead."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        if was:
            gc.enable()
