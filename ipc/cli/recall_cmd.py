"""`ctx recall`: index and sync transcripts, search them, or print the auto context."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ipc.cli.backend import open_backend
from ipc.cli.output import emit_json, parse_when


def current_project(cwd: Path | None = None) -> str:
    """The project a transcript of this folder would carry: its repository's folder name."""
    here = (cwd or Path(os.getcwd())).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            if folder.parent.name == ".worktrees":
                return folder.parent.parent.name
            return folder.name
    return here.name


def run_recall(args: argparse.Namespace) -> int:
    types = [t.strip() for t in args.type.split(",") if t.strip()] if args.type else None
    backend = open_backend(args.data_dir)
    try:
        if args.auto:
            project = args.project or current_project()
            result = backend.recall(args.query, auto=True, project=project, branch=args.branch,
                                    budget=args.budget, task=args.task, fmt=args.format,
                                    index=args.index or (), sync=args.sync)
        else:
            result = backend.recall(args.query, project=args.project, branch=args.branch,
                                    since=parse_when(args.since), types=types, k=args.k,
                                    index=args.index or (), sync=args.sync)
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
        sys.stdout.write(result.get("output") or result["context"])
        if not (result.get("output") or result["context"]).endswith("\n"):
            sys.stdout.write("\n")
        return 0
    for i, h in enumerate(result.get("hits", []), 1):
        meta = h.get("meta", {})
        flag = " FAILED" if meta.get("failure") else ""
        print(f"{i:>2}. [{h['kind']}{flag}] {meta.get('project') or '-'} · "
              f"{meta.get('branch') or '-'} · {h['title']}")
        print("    " + " ".join(h["text"].split())[:200])
    return 0
