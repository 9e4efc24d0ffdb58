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
    """``--path`` as the engine compares it (with a source's absolute path): a relative
    one is resolved from the current folder, as ``ctx ingest`` resolves what it stores,
    so the ``requests/`` a hit shows matches from the folder it was ingested from."""
    if not prefix or _URI.match(prefix):
        return prefix
    path = str(Path(prefix).expanduser().resolve())
    return path + os.sep if prefix.endswith(("/", os.sep)) and path != os.sep else path
