"""The engine's recall entry points: sync transcript folders, query them, auto context."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.api import RecallResult, SyncResult
from engine.errors import InvalidInput
from engine.flows.recall_auto import RECALL_KINDS, auto_context
from engine.flows.recall_hits import presented
from engine.flows.recall_sync import Progress, add_folder, folders, sync_files, transcript_files
from engine.flows.recall_turns import recall_hits
from engine.flows.runtime import Runtime
from engine.flows.writer import Writer
from engine.store.vault import Filters

FORMATS = ("context", "markdown", "json", "claude-hook")


def sync(rt: Runtime, writer: Writer, paths: Sequence[str] | None = None,
         progress: Progress | None = None) -> SyncResult:
    """Sync ``paths`` (files or folders), or every known transcript folder."""
    roots = [Path(p).expanduser().resolve() for p in paths] if paths else folders(rt)
    result = sync_files(rt, writer, transcript_files(roots), progress)
    result["folders"] = [str(r) for r in roots]
    rt.audit.record("sync", os.getpid(), [], {"files": result["files"],
                                              "chunks": result["chunks"]})
    return SyncResult.from_dict(result)


def recall(rt: Runtime, writer: Writer, query: str | None = None, *, auto: bool = False,
           project: str | None = None, branch: str | None = None, since: float | None = None,
           types: Sequence[str] | None = None, k: int = 10, budget: int | None = None,
           task: str | None = None, fmt: str = "context", index: Sequence[str] = (),
           do_sync: bool = False, progress: Progress | None = None) -> RecallResult:
    """Search transcript memory, or (``auto``) assemble recent + related + failures."""
    out: dict[str, Any] = {}
    for folder in index:
        add_folder(rt, folder)
    if index:
        out["indexed"] = sync(rt, writer, list(index), progress)
    if do_sync:
        out["synced"] = sync(rt, writer, None, progress)
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}")
    kinds = tuple(types or RECALL_KINDS)
    if set(kinds) - set(RECALL_KINDS):
        raise InvalidInput(f"types must be among {', '.join(RECALL_KINDS)}")
    if auto:
        b = rt.cfg.recall.auto_budget if budget is None else budget
        if not 0 <= b <= 200_000:
            raise InvalidInput("budget must be in 0..200000")
        out.update(auto_context(rt, budget=b, project=project, branch=branch,
                                task=task or query, fmt=fmt))
    elif query is not None:
        if not query.strip():
            raise InvalidInput("the query is empty")
        if not 1 <= k <= 1000:
            raise InvalidInput("k must be between 1 and 1000")
        filters = Filters(kinds=kinds, since=since, project=project, branch=branch)
        hits, drawn, own = recall_hits(rt, query, k, filters)  # chunks or turns
        out["hits"] = tuple(presented(rt, query, hits, drawn, own))
    return RecallResult(**out)
