"""What a path the user typed names, as the engine stores it: `ctx delete`'s source and
`ctx search --path`'s prefix (shared by the commands that take them)."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["delete_target", "path_prefix"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # text:…, stdin:…, project:…, https://…


def delete_target(source: str) -> str:
    """What ``ctx delete`` asks the engine for: a relative path resolved as ``ctx ingest``
    resolves it; an id (digits), a uri (``scheme:...``) or an absolute path as given."""
    from engine import shown_path  # a name that is not UTF-8: as the engine stored it

    path = Path(source).expanduser()
    if path.exists() or not (source.isdigit() or _URI.match(source) or path.is_absolute()):
        return shown_path(path.resolve())
    return shown_path(source)


def path_prefix(prefix: str | None) -> str | None:
    """``--path`` for the engine: a relative path that names something here is resolved
    from the current folder, as ``ctx ingest`` resolves what it stores; another relative
    one goes as it is, and the engine matches it with the paths hits show (under the
    folder each file was ingested from), so ``requests/`` finds what shows as such."""
    if not prefix or _URI.match(prefix):
        return prefix
    given = Path(prefix).expanduser()
    if not given.is_absolute() and not given.exists():
        return prefix
    path = str(given.resolve())
    return path + os.sep if prefix.endswith(("/", os.sep)) and path != os.sep else path
