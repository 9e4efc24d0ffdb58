"""Giving space back: the vault's free pages, the vector snapshot, the write-ahead log.

A delete frees pages inside vault.db (zeroed as they are freed: ``secure_delete``),
but the file keeps its size; the WAL grows with every write until a checkpoint cuts
it. ``compact_work`` is the writer's job (kind "compact") that gives it back:

- vault.db: a vault made since incremental vacuum gives its free pages back
  ``STEP_PAGES`` at a time, each step a short write (reads and other calls go on
  between); an older vault is rewritten whole once (``VACUUM``, encrypted as every
  page is) and is incremental from then on;
- the sealed vector snapshot is written again from what the index holds;
- the WAL is checkpointed and cut to nothing (``wal_checkpoint(TRUNCATE)``).

The job's ``current`` names the part being compacted; when done, ``bytes_total`` is
the store's size before and ``bytes`` after (``engine.flows.keeping.health.dir_size``). A
delete that removed at least ``AUTO_COMPACT_CHUNKS`` chunks compacts the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.flows.keeping.health import dir_size
from engine.flows.runtime import Runtime

# Free pages given back per write (4 KiB pages: 8 MiB a step; a step of it took about
# 0.1 s here). Hand-set: short enough that readers and writers are not held up.
STEP_PAGES = 2048
# A delete that removed this many chunks compacts afterwards (about 2-4 MB of vault at
# 200-token chunks); smaller ones leave their free pages for later writes to reuse.
AUTO_COMPACT_CHUNKS = 5000


def compact(rt: Runtime, job: Any, progress: Callable[[], None]) -> None:
    """Compact the store (see the module docstring), reporting on ``job``."""
    before = dir_size(rt.root)
    job.current = "vault"
    progress()
    if rt.vault.read_only:
        job.bytes_total = job.bytes = before
        return
    if not rt.vault.incremental():
        rt.vault.vacuum()
    else:
        while rt.vault.vacuum_step(STEP_PAGES):
            progress()
    job.current = "vectors"
    progress()
    rt.vectors.save_snapshot()
    job.current = "log"
    progress()
    rt.vault.wipe_log()
    job.bytes_total, job.bytes = before, dir_size(rt.root)  # set once done: not a rate
    job.current = ""


def compact_work(rt: Runtime) -> Callable[[Any, Callable[[], None]], None]:
    """The single writer's job (kind "compact") that gives space back."""
    def work(job: Any, progress: Callable[[], None]) -> None:
        compact(rt, job, progress)
    return work
