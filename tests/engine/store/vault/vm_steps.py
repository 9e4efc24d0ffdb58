"""Counting the SQLite VM steps a vault call takes: a scan of a table shows as several
steps per row, a seek in an index as a few, so a test can tell them apart without a
timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from engine.store.vault.core import Vault

T = TypeVar("T")


def vm_steps(vault: Vault, call: Callable[[], T]) -> tuple[T, int]:
    """``call()``'s answer and the SQLite VM steps it took (in hundreds) on this thread's
    connection."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    conn = vault._conn()
    conn.set_progress_handler(tick, 100)
    try:
        return call(), counted[0]
    finally:
        conn.set_progress_handler(None, 100)
