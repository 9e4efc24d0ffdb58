"""The ctx desktop app (PySide6): tray icon, main window with panels, first-run and unlock.

It talks to the engine only through ``engine``'s public API, from worker threads
(``desktop.host.EngineHost``); every Qt import goes through ``desktop.qt``.
Start it with ``ctx app``, ``ctx-desktop`` or ``python -m desktop.app``.
"""

import desktop.process_clock  # noqa: F401 - its first mark, before Qt loads
