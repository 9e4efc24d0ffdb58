"""File names as text that can be stored, sent and printed.

POSIX file names are bytes; Python hands names that are not valid UTF-8 over
as strings holding lone surrogates, which SQLite, JSON over the wire and a
UTF-8 terminal all refuse. ``shown()`` writes such bytes as ``\\xNN``
escapes, so a file named ``caf\\xe9.txt`` (Latin-1) is stored, reported and
deleted under that name. Valid names are returned unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path


def shown(path: str | Path) -> str:
    """``path`` as valid UTF-8 text: undecodable bytes become ``\\xNN`` escapes."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text
