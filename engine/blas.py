"""numpy's BLAS threads, capped once per process (``search.blas_threads``)."""

from __future__ import annotations

_blas_limited: list[int] = []


def limit_blas_threads(threads: int) -> None:
    """Cap numpy's BLAS threads once per process (``search.blas_threads``; 0: leave it).

    The engine's products are tiny (the ranking's, and the 384x384 QR of the vector
    rotation at open); spread over threads that wait for a busy core they cost a hundred
    times more than in one thread (see the config note). On a busy 2-core machine the
    rotation's QR took 4.1 s with OpenBLAS's threads and 0.15 s on one.
    """
    if not threads or _blas_limited:
        return
    _blas_limited.append(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency; without it, BLAS keeps its threads
        return
    threadpool_limits(threads, user_api="blas")
