"""Incremental transcript sync: decide what to read again, before reading it.

Agents append to their transcripts, so a sync normally reads only the bytes
written since the last one. ``plan`` compares a file's current size, mtime
and first bytes with what was recorded after the last parse:

- same size and mtime: ``"skip"`` (nothing is read);
- grew, and the part of the head already consumed is byte-for-byte the same:
  ``("append", offset)``: parse from ``offset`` with the recorded parser state;
- shrank, or its head changed (the file was rewritten or replaced):
  ``"full"``: drop what was stored for this file and parse it from 0.

A rewrite that keeps the size and the first ``HEAD_BYTES`` bytes but touches
the middle is not noticed; agents do not write transcripts that way.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.errors import REJECT_UNREADABLE, FileRejected
from engine.recall.model import HEAD_BYTES, ParseResult

Plan = Literal["skip", "full"] | tuple[Literal["append"], int]


@dataclass
class FileState:
    """What the last sync of one transcript recorded (stored with the source).

    ``head_hash`` is the sha256 of the first ``min(HEAD_BYTES, offset)`` bytes;
    ``offset`` is where the next parse starts; ``parser_state`` is the
    parser's resumable state (JSON-serializable; it holds user text, so it is
    stored encrypted, after privacy filtering).
    """

    path: str
    size: int
    mtime_ns: int
    head_hash: str
    offset: int
    parser_state: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "mtime_ns": self.mtime_ns,
                "head_hash": self.head_hash, "offset": self.offset,
                "parser_state": self.parser_state}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileState | None:
        """The recorded state, or None when ``data`` is not one (then sync in full)."""
        try:
            state = cls(path=str(data["path"]), size=int(data["size"]),
                        mtime_ns=int(data["mtime_ns"]), head_hash=str(data["head_hash"]),
                        offset=int(data["offset"]),
                        parser_state=dict(data.get("parser_state") or {}))
        except (KeyError, TypeError, ValueError):
            return None
        if min(state.size, state.offset, state.mtime_ns) < 0:
            return None
        return state


def read_head(path: Path) -> bytes:
    """The first ``HEAD_BYTES`` bytes of ``path`` (what ``plan`` compares)."""
    try:
        with Path(path).open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError as exc:
        raise FileRejected(str(path), REJECT_UNREADABLE) from exc


def plan(path: Path | str, stat_result: os.stat_result, head_bytes: bytes,
         previous: FileState | None) -> Plan:
    """How to sync ``path`` given its stat, its first bytes and the last recorded state."""
    if previous is None or previous.path != str(path):
        return "full"
    size, mtime_ns = stat_result.st_size, stat_result.st_mtime_ns
    if size == previous.size and mtime_ns == previous.mtime_ns:
        return "skip"
    if size < previous.size or size < previous.offset:
        return "full"
    consumed = min(HEAD_BYTES, previous.offset)
    if len(head_bytes) < consumed:
        return "full"
    if hashlib.sha256(head_bytes[:consumed]).hexdigest() != previous.head_hash:
        return "full"
    if size > previous.offset:
        return ("append", previous.offset)
    return "skip"  # touched, but nothing new


def next_state(path: Path | str, stat_result: os.stat_result, result: ParseResult) -> FileState:
    """The state to record after parsing ``path`` (stat taken before the parse).

    If the file grew while it was parsed, the recorded size is smaller than
    what was consumed; the next ``plan`` then sees a change and appends.
    """
    return FileState(path=str(path), size=stat_result.st_size, mtime_ns=stat_result.st_mtime_ns,
                     head_hash=result.head_hash, offset=result.end_offset,
                     parser_state=result.state)
