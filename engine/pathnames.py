"""File names as text that can be stored, sent and printed.

POSIX file names are bytes; Python hands names that are not valid UTF-8 over
as strings holding lone surrogates, which SQLite, JSON over the wire and a
UTF-8 terminal all refuse. ``shown()`` writes such bytes as ``\\xNN``
escapes, so a file named ``caf\\xe9.txt`` (Latin-1) is stored, reported and
deleted under that name. Valid names are returned unchanged.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_ESCAPE = re.compile(rb"\\x([89a-fA-F][0-9a-fA-F])")  # what shown() makes of a byte >= 0x80


def shown(path: str | Path) -> str:
    """``path`` as valid UTF-8 text: undecodable bytes become ``\\xNN`` escapes."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def named(text: str) -> str:
    """The file ``text`` names: itself when it is there, else the name ``shown()`` wrote
    as ``text`` (escapes back to bytes) when that is there; a caller on the wire sends
    a name that is not UTF-8 as it is shown, since JSON cannot carry its bytes."""
    if "\\x" not in text or os.path.lexists(text):
        return text
    real = os.fsdecode(_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]),
                                   text.encode("utf-8")))
    return real if os.path.lexists(real) else text
