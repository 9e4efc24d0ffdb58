"""Thread pools shared by every engine of the process (the vector lanes', the keyword
lane's second FTS5 query): each made on first use, by name, and every one shut down once,
at interpreter exit (``atexit``) or when ``shutdown_pools`` is called."""

from __future__ import annotations

import atexit
import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def shared_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """The process's pool called ``name`` (its threads' name prefix), made on first use."""
    with _LOCK:
        pool = _POOLS.get(name)
        if pool is None:
            pool = _POOLS[name] = ThreadPoolExecutor(max_workers=workers,
                                                     thread_name_prefix=name)
        return pool


def shutdown_pools(wait: bool = True) -> None:
    """Shut every shared pool down (work not started is cancelled); a later
    ``shared_pool`` call makes a new one."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=wait, cancel_futures=True)


atexit.register(shutdown_pools)
