"""Garbage collection on the GUI thread only, on a timer (the app turns Python's own off)."""

from __future__ import annotations

import gc

from desktop.qt import QObject, QTimer


class GuiGarbageCollector(QObject):
    """Garbage collection on the GUI thread only (as Anki does).

    Python's automatic collector runs in whichever thread happens to allocate:
    an engine or IPC thread could then free Qt objects there and crash the app.
    So automatic collection is off while the app runs, and a timer collects
    here: the young generation every 2 s (cheap), the middle one every 30 s, and
    everything every 5 minutes.
    """

    def __init__(self, parent: QObject, *, young_ms: int = 2000, full_every: int = 150
                 ) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._ticks = 0
        self._full_every = full_every
        self.timer = QTimer(self)
        self.timer.setInterval(young_ms)
        self.timer.timeout.connect(self.collect)
        self.timer.start()

    def collect(self) -> None:
        self._ticks += 1
        if self._ticks % self._full_every == 0:
            gc.collect(2)
        else:
            gc.collect(1 if self._ticks % 15 == 0 else 0)

    def stop(self) -> None:
        self.timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
