"""Names a package offers before it loads them: ``engine``'s face and ``engine.lab``.

Each keeps a map, name -> ``"module"`` (the same name there), ``"module:name"`` or
``"module:"`` (the module itself), and its ``__getattr__`` asks ``resolve``, so importing
the package stays cheap and a name costs only what it loads.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def resolve(where: Mapping[str, str], package: str, name: str) -> Any:
    """``name`` as ``package``'s map places it; AttributeError when the map has no such name."""
    if name not in where:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, colon, attr = where[name].partition(":")
    loaded = importlib.import_module(module)
    if colon and not attr:
        return loaded
    return getattr(loaded, attr or name)
