"""`ctx recall`: index and sync transcripts, search them, or print the auto context."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from engine import EngineAPI, InvalidInput, NotFound, RecallResult
from ipc.cli.backend import open_backend
from ipc.cli.output import emit_json, parse_when
from ipc.cli.progress import JobProgress, while_watching


def index_with_progress(backend: EngineAPI, index: list[str], sync: bool) -> RecallResult:
    """Run the index/sync step, drawing its job's progress on stderr until it ends."""
    bar = JobProgress()
    try:
        result = while_watching(backend, "sync",
                                lambda: backend.recall(None, index=index, sync=sync),
                                bar.update)
    finally:
        bar.close()
    return result or RecallResult()


def _forget_folders(args: argparse.Namespace) -> int:
    """`--forget-folder PATH`: stop syncing folders added with --index (what was stored
    from them stays: `ctx delete PATH` removes it)."""
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        forgotten = {f: backend.forget_folder(str(Path(f).expanduser().resolve()))
                     or backend.forget_folder(f) for f in args.forget_folder}
    finally:
        backend.close()
    if args.json:
        emit_json({"forgotten": forgotten})
    for folder, done in forgotten.items():
        print(f"no longer synced: {folder}" if done else
              f"not in the sync list: {folder} (folders added with --index are; the "
              "default ones and config.toml's recall.folders are not)",
              file=sys.stdout if done else sys.stderr)
    return 0 if all(forgotten.values()) else 3


def _check_args(args: argparse.Namespace) -> None:
    """A usage error for a call with nothing to do, not found for a missing --index folder
    (both before any engine starts)."""
    if args.query is None and not (args.auto or args.index or args.sync):
        raise InvalidInput("nothing to recall: give a QUERY to search past sessions, --auto "
                           "for what a new session should know, --index DIR to add a "
                           "transcript folder, or --sync (see `ctx recall --help`)",
                           field="query")
    for folder in args.index or ():
        if not Path(folder).expanduser().is_dir():
            raise NotFound(f"--index: no such folder: {folder}", field="index")


def run_recall(args: argparse.Namespace) -> int:
    if args.forget_folder:
        return _forget_folders(args)
    _check_args(args)
    types = [t.strip() for t in args.type.split(",") if t.strip()] if args.type else None
    backend = open_backend(args.data_dir, local_only=args.local, need_model=True)
    try:
        synced = RecallResult()
        if args.index or args.sync:
            folders = [str(Path(f).expanduser().resolve()) for f in args.index or ()]
            synced = index_with_progress(backend, folders, args.sync)  # as ingest resolves
        result = synced
        here = os.getcwd()  # asked from: the engine ranks this folder's project first
        if args.auto:
            result = backend.recall(args.query, auto=True, project=args.project,
                                    branch=args.branch, budget=args.budget, task=args.task,
                                    fmt=args.format, cwd=here)
        elif args.query is not None:
            result = backend.recall(args.query, project=args.project, branch=args.branch,
                                    since=parse_when(args.since), types=types, k=args.k,
                                    budget=args.budget, cwd=here)
        result = dataclasses.replace(result, indexed=synced.indexed, synced=synced.synced)
    finally:
        backend.close()
    if args.json or args.format == "json":
        emit_json(result.to_dict())
        return 0
    for key in ("indexed", "synced"):
        s = getattr(result, key)
        if s is not None:
            bad = f", {s.bad_lines} unreadable lines skipped" if s.bad_lines else ""
            print(f"{key}: {s.files} files, {s.chunks} new chunks, "
                  f"{s.unchanged} unchanged, {len(s.errors)} errors{bad} in {s.seconds:.2f} s",
                  file=sys.stderr)
            for folder in s.missing:
                print(f"  transcript folder {folder} is gone: skipped; `ctx recall "
                      f"--forget-folder {folder}` stops looking for it", file=sys.stderr)
    if args.auto:
        text = result.output or result.context or ""
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        return 0
    if result.omitted:
        print(f"{result.omitted} more hits left out to stay within {result.budget} tokens "
              "(--budget)", file=sys.stderr)
    for i, h in enumerate(result.hits or (), 1):
        meta = h.meta
        if h.line:  # session · date · branch · what came of the turn
            print(f"{i:>2}. [{h.kind}] {meta.get('project') or '-'} · {h.line}")
            print("    " + h.excerpt.replace("\n", "\n    "))
            continue
        flag = " FAILED" if meta.get("failure") else ""
        print(f"{i:>2}. [{h.kind}{flag}] {meta.get('project') or '-'} · "
              f"{meta.get('branch') or '-'} · {h.title}")
        print("    " + " ".join(h.text.split())[:200])
    return 0
