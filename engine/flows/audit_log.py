"""The audit log's writer: records queued by the calls, written to the vault behind them.

A served call's audit record (ids and counts, never content) must not hold up its
reply: written inside the call, it added a vault transaction to every
build_context over IPC (p50 4.55 -> 5.35 ms in process). Calls queue their record
here; one thread writes what has gathered, oldest first and each dated when its call
made it, in one transaction at most every ``BATCH_S`` seconds. Reading the log
(``flush``) and closing the engine write what is queued first.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence

from engine.store.vault.core import Vault

log = logging.getLogger("ctx.engine")

# Seconds records gather before one transaction writes them. Hand-set: a tenth of a
# second keeps the writes off a stream of calls, and a crash loses at most that much.
BATCH_S = 0.1

_Record = tuple[float, str, int | None, list[str], dict[str, int]]


class AuditLog:
    """Queues audit records and writes them to ``vault`` on its own thread."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._queue: queue.Queue[_Record | None] = queue.Queue()
        self._now = threading.Event()  # flush or close: write without waiting
        self._thread = threading.Thread(target=self._run, name="ctx-audit", daemon=True)
        self._thread.start()

    def record(self, method: str, caller_pid: int | None, ids: Sequence[str],
               counts: Mapping[str, int]) -> None:
        """Queue one record, dated now; it reaches the vault within ``BATCH_S``."""
        self._queue.put((time.time(), method, caller_pid, list(ids), dict(counts)))

    def flush(self) -> None:
        """Return once every record queued so far is in the vault."""
        self._now.set()
        self._queue.join()

    def close(self) -> None:
        """Write what is queued, then stop the writer."""
        self._queue.put(None)
        self._now.set()
        self._thread.join()

    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            self._now.wait(BATCH_S)  # let a stream of calls gather into one transaction
            self._now.clear()
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            records = [r for r in batch if r is not None]
            stop = len(records) < len(batch)
            try:
                if records:
                    self._vault.add_audits(records)
            except Exception as exc:  # noqa: BLE001 - auditing never stops the engine
                log.warning("%d audit records not written (%s)", len(records),
                            type(exc).__name__)
            finally:
                for _ in batch:
                    self._queue.task_done()
