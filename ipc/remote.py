"""RemoteEngine: the engine's API (``engine.EngineAPI``), served by a running ``ctx`` server.

Same methods, parameters and results as ``engine.ContextEngine``, so the CLI,
MCP and sibling processes can use either: each reply is rebuilt into the same
``engine`` result object (``Payload``, ``SearchHit``, ``JobSnapshot``...) with
its ``from_dict``. Errors arrive as the engine's own exception classes.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from engine import (
    AuditEntry,
    BackupResult,
    CompactResult,
    ConversationTurns,
    DeleteResult,
    ExportResult,
    JobSnapshot,
    KeyChangeResult,
    LiveItems,
    MetricsSnapshot,
    Payload,
    RecallResult,
    SearchHit,
    SourceInfo,
    Status,
    SyncResult,
)
from ipc.client import Client
from ipc.connection import ConnectionInfo
from ipc.discovery import find_live
from ipc.wire import IpcConfig

__all__ = ["RemoteEngine", "connect"]

_DEFAULTS = IpcConfig()


LONG_TIMEOUT_S = 6 * 3600.0  # indexing transcripts: one attempt may take this long


def _drop_none(**params: Any) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _list(value: Sequence[Any] | None) -> Any:
    """A sequence as a JSON list, its typed items (``LiveItem``, ``ConversationTurn``) as
    the objects the wire takes; anything else (an object, a string) goes as it is, so
    that the server says what is wrong instead of a list made of its keys or letters."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return value
    return [_drop_none(**dataclasses.asdict(v))
            if dataclasses.is_dataclass(v) and not isinstance(v, type) else v for v in value]


class RemoteEngine:
    """A client-side stand-in for ContextEngine; see that class for each method's meaning."""

    def __init__(self, info: ConnectionInfo, *, timeout: float = _DEFAULTS.timeout_s,
                 retries: int = _DEFAULTS.retries,
                 rediscover: Callable[[], ConnectionInfo | None] | None = None) -> None:
        self.data_dir = Path(info["data_dir"])
        self.long_timeout = LONG_TIMEOUT_S
        root = info["data_dir"]  # follow the server across restarts by its connection file
        self.client = Client(info, timeout=timeout, retries=retries,
                             rediscover=rediscover or (lambda: find_live(root)))

    @classmethod
    def connect(cls, data_dir: str | os.PathLike[str] | None = None, *,
                timeout: float = _DEFAULTS.timeout_s,
                retries: int = _DEFAULTS.retries) -> RemoteEngine | None:
        """A RemoteEngine for the live server of ``data_dir``, or None when none runs.

        It follows the server across restarts (new key, new port) by reading the
        connection file again before each retry.
        """
        info = find_live(data_dir)
        if info is None:
            return None
        root = info["data_dir"]
        return cls(info, timeout=timeout, retries=retries, rediscover=lambda: find_live(root))

    @property
    def info(self) -> ConnectionInfo:
        """The connection info in use (it changes when the server restarts)."""
        return self.client.info

    def _call(self, method: str, params: dict[str, Any] | None = None,
              timeout: float | None = None) -> Any:
        return self.client.call(method, params, timeout=timeout)

    # -- methods mirroring ContextEngine ----------------------------------------------

    def ingest(self, *, paths: Sequence[str] = (), text: str | None = None,
               title: str | None = None, kind: str = "text", external_id: str | None = None,
               wait: bool = False) -> str:
        """Queue an ingestion job and return its id; ``wait`` polls the job until it ends.

        Waiting happens here, by polling ``job``, so that no server worker and no
        single request is held for the length of an ingest.
        """
        params = _drop_none(paths=[os.fspath(p) for p in paths], text=text, title=title,
                            kind=kind, external_id=external_id, wait=False)
        job_id = str(self._call("ingest", params)["job_id"])
        if wait:
            self.wait(job_id)
        return job_id

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """Poll ``job`` until it ends (done, failed, cancelled) or ``timeout`` passes.

        Returns the last state seen, like ContextEngine.wait.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.02
        while True:
            state = self.job(job_id)
            if state.final:
                return state
            if deadline is not None and time.monotonic() >= deadline:
                return state
            time.sleep(pause if deadline is None else
                       max(0.0, min(pause, deadline - time.monotonic())))
            pause = min(0.5, pause * 1.5)

    def job(self, job_id: str) -> JobSnapshot:
        return JobSnapshot.from_dict(self._call("job", {"job_id": job_id}))

    def cancel_job(self, job_id: str) -> JobSnapshot:
        """Cancel a job (a running one stops at its next safe point); its snapshot."""
        return JobSnapshot.from_dict(self._call("cancel_job", {"job_id": job_id}))

    def jobs(self) -> list[JobSnapshot]:
        return [JobSnapshot.from_dict(j) for j in self._call("jobs")]

    def build_context(self, query: str,
                      live: LiveItems | None = None, conversation: ConversationTurns | None = None,
                      budget: int = 1500, config: Mapping[str, Any] | None = None,
                      fmt: str | None = None, mode: str | None = None,
                      now: float | None = None) -> Payload:
        return Payload.from_dict(self._call("build_context", _drop_none(
            query=query, live=_list(live), conversation=_list(conversation), budget=budget,
            config=dict(config) if config is not None else None, fmt=fmt, mode=mode, now=now)))

    def search(self, query: str, k: int = 10, *, kinds: Sequence[str] | None = None,
               path_prefix: str | None = None, since: float | None = None,
               until: float | None = None, distinct_sources: bool = False
               ) -> list[SearchHit]:
        return [SearchHit.from_dict(h) for h in self._call("search", _drop_none(
            query=query, k=k, kinds=_list(kinds), path_prefix=path_prefix, since=since,
            until=until, distinct_sources=distinct_sources or None))]

    def recall(self, query: str | None = None, *, auto: bool = False,
               project: str | None = None, branch: str | None = None,
               since: float | None = None, types: Sequence[str] | None = None, k: int = 10,
               budget: int | None = None, task: str | None = None, fmt: str = "context",
               index: Sequence[str] = (), sync: bool = False,
               cwd: str | None = None) -> RecallResult:
        """Search session memory or (``auto``) recent + related + failures.

        With ``index`` or ``sync`` the server first indexes transcripts, which may
        take minutes: that call waits up to ``long_timeout`` instead of the usual one.
        """
        params = _drop_none(query=query, auto=auto, project=project, branch=branch,
                            since=since, types=_list(types), k=k, budget=budget, task=task,
                            fmt=fmt, cwd=cwd)
        if index:
            params["index"] = [os.fspath(p) for p in index]
        if sync:
            params["sync"] = True
        timeout = self.long_timeout if (index or sync) else None
        return RecallResult.from_dict(self._call("recall", params, timeout=timeout))

    def sources(self, *, project: str | None = None) -> list[SourceInfo]:
        return [SourceInfo.from_dict(s)
                for s in self._call("sources", _drop_none(project=project))]

    def _followed(self, job_id: str) -> JobSnapshot:
        """Follow job ``job_id`` here (by polling ``job``) to its end; a failed job raises
        its error."""
        snap = self.wait(job_id)
        if snap.state == "failed" and snap.error is not None:
            raise snap.error.to_error()
        return snap

    def delete(self, source: str | int, *, wait: bool = True) -> DeleteResult:
        """Delete a source by id, uri or path (sent as a string; the engine reads ids back).

        The engine deletes in a job (kind "delete"); the call returns at once with its id
        and, with ``wait``, this client follows the job to its end (never one long call
        that times out while the engine goes on deleting). A failed delete raises its
        error."""
        result = DeleteResult.from_dict(self._call("delete", {"source": str(source),
                                                              "wait": False}))
        if wait and result.job:
            self._followed(result.job)
        return result

    def compact(self, *, wait: bool = True) -> CompactResult:
        """Give space back (a job of kind "compact"); ``wait`` follows it here, by polling
        ``job``, and fills in the sizes."""
        result = CompactResult.from_dict(self._call("compact", {"wait": False}))
        if not wait:
            return result
        snap = self._followed(result.job)
        return CompactResult(result.job, snap.bytes_total, snap.bytes)

    def rotate_key(self, *, wait: bool = True) -> KeyChangeResult:
        """Move the store to the key ``prepare_rotation`` wrote as pending (a job of kind
        "rotate"; no secret travels); ``wait`` follows it here, by polling ``job``."""
        result = KeyChangeResult.from_dict(self._call("rotate_key", {"wait": False}))
        if not wait:
            return result
        self._followed(result.job)
        return result

    def forget_folder(self, folder: str) -> bool:
        """Stop syncing a transcript folder added with ``--index``; whether it was listed."""
        return bool(self._call("forget_folder", {"folder": str(folder)})["forgotten"])

    def sync(self, paths: Sequence[str] | None = None) -> SyncResult:
        """Index what is new in the transcript folders (or ``paths``); may take minutes."""
        return SyncResult.from_dict(self._call("sync", _drop_none(paths=_list(paths)),
                                               timeout=self.long_timeout))

    def status(self) -> Status:
        """The engine's status, with ``server``: the serving process's counters."""
        return Status.from_dict(self._call("status"))

    def metrics(self) -> MetricsSnapshot:
        return MetricsSnapshot.from_dict(self._call("metrics"))

    def audit(self, since: float | None = None, limit: int = 100) -> list[AuditEntry]:
        return [AuditEntry.from_dict(a)
                for a in self._call("audit", _drop_none(since=since, limit=limit))]

    def backup(self, path: str, *, include_vectors: bool | None = None) -> BackupResult:
        """A backup written by the server (its progress: the job of kind "backup")."""
        return BackupResult.from_dict(self._call("backup", _drop_none(
            path=os.fspath(path), include_vectors=include_vectors), timeout=self.long_timeout))

    def verify_backup(self, path: str) -> BackupResult:
        return BackupResult.from_dict(self._call("verify_backup", {"path": os.fspath(path)},
                                                 timeout=self.long_timeout))

    def export(self, path: str, *, fmt: str = "jsonl", kind: str | None = None,
               project: str | None = None) -> ExportResult:
        return ExportResult.from_dict(self._call("export", _drop_none(
            path=os.fspath(path), fmt=fmt, kind=kind, project=project),
            timeout=self.long_timeout))

    # -- wire-only methods -------------------------------------------------------------

    def ping(self, timeout: float | None = None) -> dict[str, Any]:
        """Answered by the server's socket thread: proves it is alive and not wedged."""
        return dict(self._call("ping", timeout=timeout))

    def shutdown(self) -> dict[str, Any]:
        """Ask the server to stop after in-flight requests (it replies first)."""
        return dict(self._call("shutdown"))

    def close(self) -> None:
        """Close the client socket; the server keeps running."""
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(data_dir: str | os.PathLike[str] | None = None, *,
            timeout: float = _DEFAULTS.timeout_s,
            retries: int = _DEFAULTS.retries) -> RemoteEngine | None:
    """A RemoteEngine for the live server of ``data_dir`` (None when none is running)."""
    return RemoteEngine.connect(data_dir, timeout=timeout, retries=retries)
