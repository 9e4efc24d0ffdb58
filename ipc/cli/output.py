"""Terminal output for the CLI: JSON, tables, dates, and a progress bar on a TTY."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from engine import InvalidInput, JobSnapshot


def emit_json(data: Any, out: TextIO = sys.stdout) -> None:
    out.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n")


def fmt_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


def table(rows: list[list[str]], headers: list[str], out: TextIO = sys.stdout) -> None:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip() + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")


_REL = re.compile(r"^(\d+)\s*([smhdw])$")


def parse_when(text: str | None) -> float | None:
    """Epoch seconds from an ISO date/time, an epoch number, or a relative '7d', '12h'."""
    if text is None:
        return None
    text = text.strip()
    m = _REL.match(text)
    if m:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
        return time.time() - int(m.group(1)) * unit
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput("dates must be ISO (2024-05-01), epoch seconds, or like 7d") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self._last = 0.0

    def update(self, snap: JobSnapshot, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        total = max(1, snap.files_total)
        done = snap.files_done
        width = 28
        filled = int(width * min(done, total) / total)
        bar = "#" * filled + "-" * (width - filled)
        current = snap.current[-40:]
        self.stream.write(f"\r[{bar}] {done}/{total} files  {snap.chunks} chunks  "
                          f"{current:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class SyncProgress:
    """Transcript indexing progress on stderr: files, bytes, chunks, rate and time left.

    On a terminal one line is redrawn; otherwise (a log, an agent) a line is
    printed every ``every_s`` seconds, so a long index is never silent.
    """

    def __init__(self, stream: TextIO = sys.stderr, every_s: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.every_s = 0.2 if self.tty else every_s
        self._last = 0.0
        self._t0 = time.monotonic()
        self._drawn = False

    def line(self, snap: JobSnapshot) -> str:
        elapsed = max(1e-6, time.monotonic() - self._t0)
        done, total = snap.bytes, snap.bytes_total
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 and total >= done else None
        eta = fmt_duration(left) if left is not None and done else "?"
        return (f"indexing: {snap.files_done}/{snap.files_total} files, "
                f"{fmt_bytes(done)}/{fmt_bytes(total)}, {snap.chunks} chunks, "
                f"{fmt_bytes(rate)}/s, {fmt_duration(elapsed)} elapsed, {eta} left")

    def update(self, snap: JobSnapshot, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        text = self.line(snap)
        if self.tty:
            self.stream.write("\r" + text.ljust(100)[:160])
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
