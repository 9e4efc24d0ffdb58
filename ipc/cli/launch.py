"""Where the desktop app's program is: the ``ctx-desktop`` entry point, found, not imported.

The CLI never imports the app (ipc sits below desktop): ``ctx app`` runs it as
a program. A pip install puts the ``ctx-desktop`` script next to the Python
that runs ``ctx``; the bundle puts its ``ctx-app`` launcher next to ``ctx``.
Elsewhere (a checkout run with ``python -m``) the entry point's module, read
from the installed package's metadata, runs under this Python.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from engine import ConfigError

ENTRY_POINT = "ctx-desktop"
# The program's names next to sys.executable: the pip script, then the bundle's launcher.
_PROGRAMS = (ENTRY_POINT, "ctx-app")
_MISSING = "the desktop app is not installed here: pip install 'ctx[desktop]'"


def desktop_command() -> list[str]:
    """The command line that starts the desktop app (ConfigError when there is none)."""
    here = Path(sys.executable).parent
    suffix = ".exe" if os.name == "nt" else ""
    for name in _PROGRAMS:
        program = here / (name + suffix)
        if program.is_file():
            return [str(program)]
    found = importlib.metadata.entry_points(group="gui_scripts", name=ENTRY_POINT)
    for ep in found:
        if importlib.util.find_spec("PySide6") is None:
            raise ConfigError("the desktop app needs PySide6: pip install 'ctx[desktop]'")
        return [sys.executable, "-m", ep.module]
    raise ConfigError(_MISSING)
