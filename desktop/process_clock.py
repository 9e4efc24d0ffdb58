"""When this process started, on the monotonic clock: what the app's start-up timings
(``ctx app --status``: ``timings_ms``) are measured from.

Measured from the App object instead, they left out the interpreter, the imports and
Qt's start (most of the 0.9-1.4 s before a tray icon maps) and said 7-31 ms. Linux
gives the process's start in /proc (clock ticks since boot, the boot-time clock);
elsewhere the earliest mark is when ``desktop`` was first imported.
"""

from __future__ import annotations

import os
import time

IMPORTED = time.monotonic()  # the fallback: desktop's first import (before Qt loads)


def process_started() -> float:
    """``time.monotonic()`` at this process's start (to a clock tick, 10 ms, on Linux)."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as fh:
            stat = fh.read()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22: starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return IMPORTED
    if not 0 <= age < 30 * 86400:
        return IMPORTED
    return time.monotonic() - age
