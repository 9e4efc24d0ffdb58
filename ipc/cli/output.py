"""Terminal output for the CLI: JSON, tables, dates, sizes and durations (progress:
``ipc.cli.progress``)."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from engine import InvalidInput


def emit_json(data: Any, out: TextIO = sys.stdout) -> None:
    out.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n")


def emit_result(result: Any, as_json: bool, line: str) -> None:
    """A command's result: its wire form (``to_dict()``) as JSON with --json, else ``line``."""
    if as_json:
        emit_json(result.to_dict())
    else:
        print(line)


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
