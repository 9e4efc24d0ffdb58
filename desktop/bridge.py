"""The one way from other threads to the GUI thread: ``GuiBridge.post(fn)``.

Engine events (the writer thread, IPC workers), finished pool tasks and the
watched folders' reports all arrive on threads that must not touch widgets.
Each hands a callable to ``post``; the bridge keeps it in a Python queue and
wakes the GUI thread with an argument-less queued signal, where the callables
run in order. No Python object crosses threads inside Qt (PySide can free one
off the GIL there and crash), and one wake-up drains everything posted so far.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from desktop.qt import QObject, Qt, Signal, Slot

log = logging.getLogger("ctx.desktop.bridge")


class GuiBridge(QObject):
    """Runs posted callables on the thread that owns it (the GUI thread), in order."""

    _wake = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._woken = False  # a wake-up is on its way: later posts ride on it
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable[[], None]) -> None:
        """Any thread: run ``fn()`` on the GUI thread soon, after what was posted before."""
        self._queue.put(fn)
        with self._lock:
            if self._woken:
                return
            self._woken = True
        self._wake.emit()

    @Slot()
    def _drain(self) -> None:
        with self._lock:
            self._woken = False
        while True:
            try:
                fn = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            except Exception:  # one handler's bug must not drop what follows it
                log.exception("a GUI-thread handler failed")
