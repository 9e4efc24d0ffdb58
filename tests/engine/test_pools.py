"""The thread pools every engine of a process shares (engine/pools.py) are shut down, at
exit or when asked: none is left running, and a later use makes a fresh one."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from engine.pools import shared_pool, shutdown_pools

REPO = Path(__file__).resolve().parents[2]


def test_a_shared_pool_is_made_once_and_shut_down() -> None:
    pool = shared_pool("ctx-test-pool", 2)
    assert shared_pool("ctx-test-pool", 2) is pool
    assert pool.submit(threading.current_thread).result().name.startswith("ctx-test-pool")
    shutdown_pools()
    assert not [t for t in threading.enumerate() if t.name.startswith("ctx-test-pool")]
    fresh = shared_pool("ctx-test-pool", 2)
    assert fresh is not pool and fresh.submit(lambda: 7).result() == 7
    shutdown_pools()


def test_the_lanes_and_the_vaults_pools_are_shut_down_at_exit() -> None:
    """A process that used the vector lanes' and the FTS5 query's pools ends with both
    shut down by engine.pools' exit hook (the check is registered first, so it runs last)."""
    code = """
import atexit
pools = []
atexit.register(lambda: print([p._shutdown for p in pools]))
from engine.flows.search import lanes
from engine.store.vault import keyword_reads as vault
pools += [lanes._lane_pool(), vault._fts_pool()]
for p in pools:
    p.submit(int).result()
print([p._shutdown for p in pools])
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[False, False]", "[True, True]"], done.stdout
