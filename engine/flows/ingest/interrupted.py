"""Ingestion jobs an earlier run left unfinished, remembered in the vault until they end.

A "paths" job's inputs (the files and folders it was asked to ingest) are
written to the vault when it is queued and removed when it ends: done, failed,
or cancelled by the person who asked. What is still there at the next open was
interrupted: by a quit that stopped the job (``cancel_all``), a crash, a kill.
Those jobs are listed with their last known counts and can be resumed (their
inputs ingested again: the files stored before the interruption are skipped
as unchanged) or dismissed.

The record lives in the vault's meta table (encrypted like the rest; paths are
the user's). A record that cannot be written is logged and never fails the job.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

from engine.api import JobSnapshot
from engine.errors import CtxError
from engine.flows.job import Job
from engine.store.vault.core import Vault

log = logging.getLogger("ctx.engine")

META_KEY = "interrupted_jobs"
# A job's fields kept with its inputs, as the last snapshot had them.
_COUNTS = ("files_total", "files_done", "files_skipped", "files_unchanged", "chunks", "bytes")


class InterruptedJobs:
    """The vault's record of unfinished "paths" jobs (see the module docstring)."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = _load(vault)
        self._earlier = set(self._records)  # left by earlier runs: what is listed
        self._ended: set[str] = set()  # ended before their record was written
        self._by_user: set[str] = set()

    def started(self, job_id: str, inputs: Sequence[str], created: float) -> None:
        """A "paths" job was queued: remember its inputs until it ends."""
        with self._lock:
            if job_id in self._ended:  # it ran and ended first: nothing to remember
                self._ended.discard(job_id)
                return
            self._records[job_id] = {"inputs": list(inputs), "created": created}
            self._save()

    def cancelled_by_user(self, job_id: str) -> None:
        """The person cancelled it: when it ends, it is not listed as interrupted."""
        with self._lock:
            self._by_user.add(job_id)

    def finished(self, job: Job | JobSnapshot) -> None:
        """A job ended (a running ``Job``, or a ``JobSnapshot``, read only): forget it, unless something other than its asker stopped it."""
        with self._lock:
            record = self._records.get(job.id)
            if record is None:
                self._ended.add(job.id)
                return
            # Stopped in its vector stage, every file is stored: nothing is left to read
            # (the engine makes the vectors itself at the next open), so nothing to list.
            left = getattr(job, "stage", "") != "vectors"
            if job.state == "cancelled" and job.id not in self._by_user and left:
                record.update({name: getattr(job, name) for name in _COUNTS},
                              finished=job.finished)
            else:
                del self._records[job.id]
            self._by_user.discard(job.id)
            self._save()

    def deleted(self, uris: Sequence[str]) -> None:
        """Sources the user deleted: a job listed here that covers them leaves them out
        when it is resumed (it reads "the rest", not what the user let go of)."""
        with self._lock:
            changed = False
            for job_id in self._earlier:
                record = self._records.get(job_id)
                if record is None:
                    continue
                roots = [str(p).rstrip("/") for p in record["inputs"]]
                mine = [u for u in uris if any(u == r or u.startswith(r + "/") for r in roots)]
                if mine:
                    record["deleted"] = sorted({*record.get("deleted", ()), *mine})
                    changed = True
            if changed:
                self._save()

    def deleted_under(self, job_id: str) -> list[str]:
        """What the user deleted of a listed job's files since it was interrupted."""
        with self._lock:
            record = self._records.get(job_id) or {}
            return [str(u) for u in record.get("deleted", ())]

    def listed(self) -> list[JobSnapshot]:
        """The jobs earlier runs left unfinished, oldest first."""
        with self._lock:
            out = [_snapshot(job_id, self._records[job_id]) for job_id in self._earlier
                   if job_id in self._records and not _all_read(self._records[job_id])]
        return sorted(out, key=lambda s: s.created)

    def take(self, job_id: str) -> JobSnapshot | None:
        """Forget an earlier job (resumed or dismissed); its snapshot, or None."""
        with self._lock:
            if job_id not in self._earlier or job_id not in self._records:
                return None
            snap = _snapshot(job_id, self._records.pop(job_id))
            self._earlier.discard(job_id)
            self._save()
            return snap

    def _save(self) -> None:
        if self._vault.read_only:
            return
        try:
            self._vault.set_meta(META_KEY, json.dumps(self._records, sort_keys=True))
        except CtxError as exc:  # the job goes on; only its resumption is at stake
            log.warning("unfinished jobs not recorded (%s)", exc.name)


def _load(vault: Vault) -> dict[str, dict[str, Any]]:
    raw = vault.get_meta(META_KEY)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        log.warning("the record of unfinished jobs is unreadable: dropped")
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("inputs"), list)}


def _all_read(record: dict[str, Any]) -> bool:
    """A record of a job that had read every file (stopped while making vectors)."""
    total = int(record.get("files_total") or 0)
    return total > 0 and int(record.get("files_done") or 0) >= total


def _snapshot(job_id: str, record: dict[str, Any]) -> JobSnapshot:
    counts: dict[str, Any] = {name: int(record.get(name) or 0) for name in _COUNTS}
    return JobSnapshot(id=job_id, kind="paths", state="cancelled",
                       created=float(record.get("created") or 0.0),
                       finished=record.get("finished"),
                       inputs=tuple(str(p) for p in record["inputs"]), interrupted=True,
                       **counts)
