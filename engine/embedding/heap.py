"""Keep the C heap from holding on to the peak of model inference (glibc only).

glibc serves large allocations with mmap and gives them back on free, but its
threshold for doing so rises each time such a block is freed (up to 32 MiB).
Model inference allocates and frees tens of MB per batch, so after the first
batches those buffers come from the heap instead, and the heap keeps its high
water mark: ingesting 1 MB of text held 0.3 GB more than the live data
(bench.ingest_mem). Fixing the threshold keeps large buffers on mmap, so
memory goes back to the system after every batch. Elsewhere this does nothing.
The setting is process-wide: any block of 1 MiB or more is mmapped afresh and its
pages zeroed by the kernel at each use, so the vector index's query keeps its arrays
under that (engine/store/vectors/exact_index.py: a third of its time at a million rows,
docs/performance.md). Fixing it also fixes glibc's trim threshold (128 KiB): in the
engine's vector lane at a million rows that left no page faults per query, so it is
not raised.
"""

from __future__ import annotations

import ctypes
import platform
import sys
import threading

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
MMAP_THRESHOLD_BYTES = 1 << 20  # blocks of 1 MiB and more are mmapped (bench.ingest_mem)

_done = False
_lock = threading.Lock()


def cap_heap_retention() -> bool:
    """Fix glibc's mmap threshold once per process; True when it was set here or before."""
    global _done
    with _lock:
        if _done:
            return True
        if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
            return False  # macOS, Windows, musl: nothing to tune
        try:
            mallopt = ctypes.CDLL(None).mallopt  # glibc is already loaded: no library search
        except (OSError, AttributeError):
            return False
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        mallopt.restype = ctypes.c_int
        _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
        return _done
