"""The engine's recall entry points: sync transcript folders, query them, auto context."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.api import RecallResult, SyncResult
from engine.errors import EmptyQuery, InvalidInput, NotFound
from engine.flows.ingest.writer import Writer
from engine.flows.recall.auto import RECALL_KINDS, auto_context
from engine.flows.recall.hits import presented, shown_tokens
from engine.flows.recall.sync import (
    Progress,
    add_folder,
    folders,
    looked_in,
    sync_files,
    transcript_files,
)
from engine.flows.recall.turns import recall_hits
from engine.flows.runtime import Runtime
from engine.flows.search.inputs import check_budget
from engine.recall.asked_from import project_of_folder
from engine.recall.chunks import SESSION_CODE
from engine.store.vault.rows import Filters

FORMATS = ("context", "markdown", "json", "claude-hook")
TYPE_ALIASES = {"code": SESSION_CODE}  # recall's --type names users already know


def sync(rt: Runtime, writer: Writer, paths: Sequence[str] | None = None,
         progress: Progress | None = None) -> SyncResult:
    """Sync ``paths`` (files or folders), or every known transcript folder."""
    roots = [Path(p).expanduser().resolve() for p in paths] if paths else folders(rt)
    missing = [r for r in roots if not r.exists()]  # said once each, never read
    roots = [r for r in roots if r not in missing]
    result = sync_files(rt, writer, transcript_files(roots), progress)
    result["folders"] = [str(r) for r in roots]
    result["looked_in"] = [str(r) for r in roots] if paths else [str(p) for p in looked_in(rt)]
    result["missing"] = [str(r) for r in missing]
    rt.audit.record("sync", os.getpid(), [], {"files": result["files"],
                                              "chunks": result["chunks"]})
    return SyncResult.from_dict(result)


def recall(rt: Runtime, writer: Writer, query: str | None = None, *, auto: bool = False,
           project: str | None = None, branch: str | None = None, since: float | None = None,
           types: Sequence[str] | None = None, k: int = 10, budget: int | None = None,
           task: str | None = None, fmt: str = "context", index: Sequence[str] = (),
           do_sync: bool = False, progress: Progress | None = None,
           cwd: str | None = None) -> RecallResult:
    """Search transcript memory, or (``auto``) assemble recent + related + failures.

    Only coding sessions are searched (documents are ``search``'s and build_context's).
    The project asked from is ``project``, else the project of the folder ``cwd``
    (``asked_from``): a query ranks that project's sessions first without hiding the
    others' (``rerank`` feature ``same_project``); ``auto`` digests that project."""
    out: dict[str, Any] = {}
    kinds = check_recall(query, auto=auto, types=types, k=k, budget=budget, fmt=fmt,
                         index=index, do_sync=do_sync)
    if project is None and cwd is not None:
        project = project_of_folder(cwd)
    for folder in index:
        add_folder(rt, folder)
    if index:
        out["indexed"] = sync(rt, writer, list(index), progress)
    if do_sync:
        out["synced"] = sync(rt, writer, None, progress)
    if auto:
        b = rt.cfg.recall.auto_budget if budget is None else budget
        out.update(auto_context(rt, budget=b, project=project, branch=branch,
                                task=task or query, fmt=fmt))
    elif query is not None:
        # the session kinds are theirs alone: no document chunk passes (issue 31)
        filters = Filters(kinds=kinds, since=since, branch=branch)
        hits, drawn, own, parts, weigher = recall_hits(rt, query, k, filters, project)
        shown = tuple(presented(rt, query, hits, drawn, own, budget=budget, parts=parts,
                                weigher=weigher))
        out["hits"] = shown
        if budget is not None:  # the hits fit in it: how much they take, how many did not
            omitted = len(hits) - len(shown)
            out.update(total_tokens=shown_tokens(rt, shown, omitted), budget=budget,
                       omitted=omitted)
    return RecallResult(**out)


def check_recall(query: str | None, *, auto: bool, types: Sequence[str] | None, k: int,
                 budget: int | None, fmt: str, index: Sequence[str], do_sync: bool
                 ) -> tuple[str, ...]:
    """The chunk kinds to search, once the call's inputs are checked (before any sync
    work): each error names its parameter (``details.field``) and what is wrong with it."""
    if fmt not in FORMATS:
        raise InvalidInput(f"fmt must be one of {', '.join(FORMATS)}", field="fmt")
    # "code" names the sessions' code blocks, as it did before they had a kind of their own
    kinds = tuple(dict.fromkeys(TYPE_ALIASES.get(t, t) for t in types or RECALL_KINDS))
    if set(kinds) - set(RECALL_KINDS):
        raise InvalidInput(f"types must be among {', '.join(RECALL_KINDS)} (or code)",
                           field="types")
    if budget is not None:
        check_budget(budget)
    for i, folder in enumerate(index):
        if not Path(folder).expanduser().is_dir():
            raise NotFound(f"index[{i}]: no such folder", field=f"index[{i}]")
    if not auto and query is None and not index and not do_sync:
        raise InvalidInput("nothing to recall: give a query, or auto, index or sync",
                           field="query")
    if not auto and query is not None:
        if not query.strip():
            raise EmptyQuery("the query is empty", field="query")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInput("k must be between 1 and 1000", field="k")
    return kinds
