"""`ctx recall`: index and sync transcripts, search them, or print the auto context."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ipc.cli.backend import LocalBackend, RemoteBackend, open_backend
from ipc.cli.output import SyncProgress, emit_json, parse_when


def current_project(cwd: Path | None = None) -> str:
    """The project a transcript of this folder would carry: its repository's folder name."""
    here = (cwd or Path(os.getcwd())).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            if folder.parent.name == ".worktrees":
                return folder.parent.parent.name
            return folder.name
    return here.name


def _watcher(backend: LocalBackend | RemoteBackend) -> Any:
    """Something to poll ``jobs()`` on while another call indexes (its own socket if remote)."""
    if isinstance(backend, RemoteBackend):
        from ipc.remote import RemoteEngine

        return RemoteEngine(backend.remote_engine.info, timeout=5.0)
    return backend


def index_with_progress(backend: LocalBackend | RemoteBackend, index: list[str],
                        sync: bool) -> dict[str, Any]:
    """Run the index/sync step, drawing its job's progress on stderr until it ends."""
    holder: dict[str, Any] = {}
    since = time.time() - 1.0

    def work() -> None:
        try:
            holder["result"] = backend.recall(None, index=index, sync=sync)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            holder["error"] = exc

    thread = threading.Thread(target=work, name="ctx-recall-index", daemon=True)
    thread.start()
    watcher = _watcher(backend)
    bar = SyncProgress()
    last: dict[str, Any] | None = None
    try:
        while thread.is_alive():
            thread.join(0.2)
            try:
                jobs = [j for j in watcher.jobs() if j.get("kind") == "sync"
                        and j.get("state") == "running" and (j.get("created") or 0) >= since]
            except Exception:  # noqa: BLE001 - progress is best effort; the result decides
                jobs = []
            if jobs:
                last = jobs[-1]
                bar.update(last)
    finally:
        bar.close()
        if watcher is not backend:
            watcher.close()
    if "error" in holder:
        raise holder["error"]
    return dict(holder.get("result") or {})


def run_recall(args: argparse.Namespace) -> int:
    types = [t.strip() for t in args.type.split(",") if t.strip()] if args.type else None
    backend = open_backend(args.data_dir, local_only=args.local, need_model=True)
    try:
        result: dict[str, Any] = {}
        if args.index or args.sync:
            result.update(index_with_progress(backend, args.index or [], args.sync))
        if args.auto:
            project = args.project or current_project()
            result.update(backend.recall(args.query, auto=True, project=project,
                                         branch=args.branch, budget=args.budget, task=args.task,
                                         fmt=args.format))
        elif args.query is not None:
            result.update(backend.recall(args.query, project=args.project, branch=args.branch,
                                         since=parse_when(args.since), types=types, k=args.k))
    finally:
        backend.close()
    if args.json or args.format == "json":
        emit_json(result)
        return 0
    for key in ("indexed", "synced"):
        if key in result:
            s = result[key]
            print(f"{key}: {s['files']} files, {s['chunks']} new chunks, "
                  f"{s['unchanged']} unchanged, {len(s['errors'])} errors in {s['seconds']:.2f} s",
                  file=sys.stderr)
    if args.auto:
        text = result.get("output") or result["context"]
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        return 0
    for i, h in enumerate(result.get("hits", []), 1):
        meta = h.get("meta", {})
        if "line" in h:  # session · date · branch · what came of the turn
            print(f"{i:>2}. [{h['kind']}] {meta.get('project') or '-'} · {h['line']}")
            print("    " + h["excerpt"].replace("\n", "\n    "))
            continue
        flag = " FAILED" if meta.get("failure") else ""
        print(f"{i:>2}. [{h['kind']}{flag}] {meta.get('project') or '-'} · "
              f"{meta.get('branch') or '-'} · {h['title']}")
        print("    " + " ".join(h["text"].split())[:200])
    return 0
