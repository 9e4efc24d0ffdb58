"""Incremental sync of transcript folders into the store.

Each sync of a file stores what it added as one source, a *segment*
(``transcript:<path>#<offset>``), so every write is crash-safe on its own; a
re-run after a crash re-writes the same segment uri, which replaces rather
than duplicates. The per-file sync state (it holds parser state with user
text) lives in the encrypted vault.

The calls still waiting for their result where a file ends (the session stopped
mid-call, or the agent is running it) are stored in a source of their own,
``transcript:<path>#pending``, with the ordinals that follow the segments. Every
later sync that reads the file replaces it (or drops it, once no call waits): the
parser state still holds those calls, so the sync that reads a result (or the next
request) stores the call for good in its segment. What the store holds is then
what one sync of the whole file would have stored.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.errors import FileRejected
from engine.flows.ingest.writer import Writer
from engine.flows.runtime import Runtime
from engine.recall.chunks import pending_chunks, transcript_chunks
from engine.recall.claude import parse_claude
from engine.recall.codex import parse_codex
from engine.recall.model import detect_agent
from engine.recall.privacy import apply_privacy
from engine.recall.syncplan import FileState, next_state, plan, read_head
from engine.store.vault import recall_files
from engine.store.vault import sources as src
from engine.types import LoadedDocument

log = logging.getLogger("ctx.recall")

FOLDERS_KEY = "recall_folders"


def default_places() -> list[Path]:
    """Where Claude Code and Codex keep their transcripts, whether there or not."""
    home = Path.home()
    return [home / ".claude" / "projects", home / ".codex" / "sessions"]


def default_folders() -> list[Path]:
    return [p for p in default_places() if p.is_dir()]


def looked_in(rt: Runtime) -> list[Path]:
    """Every place a sync looks: the default ones (there or not), config, `--index` ones."""
    out = [p.expanduser().resolve() for p in default_places()]
    return out + [p for p in folders(rt) if p not in out]


def folders(rt: Runtime) -> list[Path]:
    """Transcript folders to sync: the defaults that exist, config, and `--index` ones."""
    added = json.loads(rt.vault.get_meta(FOLDERS_KEY) or "[]")
    out: list[Path] = []
    for p in [*default_folders(), *map(Path, rt.cfg.recall.folders), *map(Path, added)]:
        p = p.expanduser().resolve()
        if p not in out:
            out.append(p)
    return out


def add_folder(rt: Runtime, folder: str) -> Path:
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise FileRejected(str(path), "unreadable", f"not a folder: {path}")
    added = json.loads(rt.vault.get_meta(FOLDERS_KEY) or "[]")
    if str(path) not in added:
        rt.vault.set_meta(FOLDERS_KEY, json.dumps(sorted([*added, str(path)])))
    return path


def forget_folder(rt: Runtime, folder: str) -> bool:
    """Stop syncing a folder added with ``--index`` (it may be gone already: the path as
    given, and as it resolves); what was stored from it stays. False when it was not in
    the list (a default or config.toml folder is not kept there)."""
    added = json.loads(rt.vault.get_meta(FOLDERS_KEY) or "[]")
    names = {folder, str(Path(folder).expanduser()), str(Path(folder).expanduser().resolve())}
    kept = [f for f in added if f not in names]
    if len(kept) == len(added):
        return False
    rt.vault.set_meta(FOLDERS_KEY, json.dumps(sorted(kept)))
    return True


def transcript_files(roots: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        if root.is_file() and root.suffix == ".jsonl":
            files.append(root)
        elif root.is_dir():
            files.extend(sorted(p for p in root.rglob("*.jsonl") if p.is_file()))
    return files


def _states(rt: Runtime) -> dict[str, FileState]:
    """Each transcript's last sync state by path; a deleted transcript's under the
    keyed name that stands for its path (``src.forgotten_name``)."""
    out = {}
    for path, value in recall_files.sync_states(rt.vault).items():
        state = FileState.from_dict(value)
        if state is not None:
            out[path] = state
    return out


def _prev(rt: Runtime, states: dict[str, FileState], path: Path) -> FileState | None:
    """The last sync state of ``path``: its own, or the one kept after its delete (the
    offsets only, under a keyed name, with the path put back)."""
    prev = states.get(str(path))
    if prev is None:
        kept = states.get(src.forgotten_name(str(path), rt.hasher))
        if kept is not None:
            prev = replace(kept, path=str(path))
    return prev


def _segment_prefix(path: Path) -> str:
    return f"transcript:{path}#"


PENDING = "pending"  # the uri tail of a file's pending calls' source (after the prefix)


def _drop_segments(rt: Runtime, writer: Writer, path: Path) -> int:
    prefix = _segment_prefix(path)
    ids = recall_files.segment_ids(rt.vault, prefix)
    src.delete_sources(rt.vault, ids)
    writer.flush_tombstones()
    return len(ids)


Progress = Callable[[dict[str, Any]], None]


def _plan_all(states: dict[str, FileState], files: Sequence[Path],
              prev_of: Callable[[Path], FileState | None] | None = None
              ) -> tuple[list[tuple[Path, os.stat_result, FileState | None]], int, int]:
    """The files that changed since their last sync, the bytes to read, and the unchanged count."""
    todo: list[tuple[Path, os.stat_result, FileState | None]] = []
    to_read = unchanged = 0
    for path in files:
        prev = prev_of(path) if prev_of is not None else states.get(str(path))
        try:
            st = os.stat(path)
        except OSError:
            todo.append((path, os.stat_result((0,) * 10), prev))
            continue
        if prev is not None and st.st_size == prev.size and st.st_mtime_ns == prev.mtime_ns:
            unchanged += 1
            continue
        todo.append((path, st, prev))
        to_read += max(0, st.st_size - (prev.offset if prev is not None else 0))
    return todo, to_read, unchanged


# chunks per model call, across files: padding 6% (per file 26%) (docs/tuning.md)
BATCH_CHUNKS = 512


class _Batch:
    """Parsed files waiting to be embedded and stored together, with their sync states.

    A file's state is recorded only after its segment is stored, so a crash
    in between makes the next sync read that file again, never skip it.
    """

    def __init__(self, rt: Runtime, writer: Writer) -> None:
        self.rt, self.writer = rt, writer
        # (Prepared, its file's state on its file's last document, else None)
        self.items: list[tuple[Any, FileState | None]] = []
        self.chunks = 0

    def add(self, prepared: list[Any], state: FileState | None) -> None:
        """A file's documents (its new segment, its pending calls), written together;
        its state recorded once the last is stored."""
        if state is None:  # not a transcript: nothing to record
            return
        if not prepared:
            _save_state(self.rt, state)
            return
        for n, p in enumerate(prepared, 1):
            self.items.append((p, state if n == len(prepared) else None))
            self.chunks += len(p.chunks)

    def flush(self) -> None:
        if not self.items:
            return
        states = {id(p): st for p, st in self.items}

        def written(p: Any, _sid: int) -> None:
            state = states[id(p)]
            if state is not None:
                _save_state(self.rt, state)

        self.writer.write_batch([p for p, _ in self.items], on_written=written)
        self.items, self.chunks = [], 0


def _save_state(rt: Runtime, state: FileState) -> None:
    recall_files.save_sync_state(rt.vault, state.path, state.to_dict(),
                                 replaces=src.forgotten_name(state.path, rt.hasher))


def sync_files(rt: Runtime, writer: Writer, files: Sequence[Path],
               progress: Progress | None = None) -> dict[str, Any]:
    """Index what is new in ``files``; returns counts (files seen, skipped, read, chunks...).

    Files are parsed one by one and embedded in batches of about
    ``BATCH_CHUNKS`` chunks across files. ``progress`` is called as files are
    read with ``files_total`` (files that changed), ``files_done``,
    ``bytes_total`` (bytes to read), ``bytes``, ``chunks`` and ``current`` (a
    path, never content).
    """
    t0 = time.perf_counter()
    states = _states(rt)
    stats: dict[str, Any] = {"files": len(files), "unchanged": 0, "appended": 0, "full": 0,
                             "chunks": 0, "bad_lines": 0, "errors": []}
    embedded_before = writer.embedded_texts
    todo, to_read, stats["unchanged"] = _plan_all(states, files, lambda p: _prev(rt, states, p))
    done: dict[str, Any] = {"files_total": len(todo), "files_done": 0, "bytes_total": to_read, "bytes": 0,
            "chunks": 0, "current": ""}
    if progress is not None:
        progress(dict(done))
    batch = _Batch(rt, writer)
    for path, st, prev in todo:
        key = str(path)
        done["current"] = key
        try:
            st = os.stat(path)
            decision = plan(path, st, read_head(path), prev)
        except (OSError, FileRejected):
            stats["errors"].append({"path": key, "reason": "unreadable"})
            decision = "skip"
        if decision == "skip":
            stats["unchanged"] += 1
        else:
            try:
                prepared, state, n_chunks, bad = _read_one(rt, writer, path, st, decision, prev)
            except (OSError, FileRejected):
                stats["errors"].append({"path": key, "reason": "unreadable"})
            else:
                batch.add(prepared, state)
                stats["full" if decision == "full" else "appended"] += 1
                stats["chunks"] += n_chunks
                stats["bad_lines"] += bad
        if batch.chunks >= BATCH_CHUNKS:
            batch.flush()
        done["files_done"] += 1
        done["bytes"] += max(0, st.st_size - (prev.offset if prev is not None else 0))
        done["chunks"] = stats["chunks"]
        if progress is not None:
            progress(dict(done))
    batch.flush()
    stats["embedded"] = writer.embedded_texts - embedded_before
    stats["seconds"] = round(time.perf_counter() - t0, 4)
    return stats


def _read_one(rt: Runtime, writer: Writer, path: Path, st: os.stat_result, decision: Any,
              prev: FileState | None) -> tuple[list[Any], FileState | None, int, int]:
    """Parse what is new in ``path``: (prepared documents: its new segment, its pending
    calls; the state to record; chunks; bad lines)."""
    agent = detect_agent(path)
    if agent is None:
        return [], None, 0, 0
    prefix = _segment_prefix(path)
    pending_uri = prefix + PENDING
    if decision == "full":
        _drop_segments(rt, writer, path)
        offset, pstate, start = 0, None, 0
    else:
        offset, pstate = int(decision[1]), (prev.parser_state if prev else None)
        start = (recall_files.segment_chunks(rt.vault, prefix)
                 - recall_files.segment_chunks(rt.vault, pending_uri))
    parse = parse_claude if agent == "claude" else parse_codex
    result = apply_privacy(parse(path, start_offset=offset, state=pstate), rt.cfg.recall.privacy)
    if decision != "full" and result.end_offset == offset:
        # no whole line yet: the state is the one recorded, the pending calls stored stand
        return [], next_state(path, st, result), 0, result.bad_lines
    cfg = rt.cfg.recall.chunks
    chunks = transcript_chunks(result, cfg, rt.counter, start_ordinal=start)
    waiting = pending_chunks(result, cfg, rt.counter, start_ordinal=start + len(chunks))
    info = result.info
    prepared = []
    # the pending calls' source is written again whenever the file is read (it replaces
    # its last version): the same texts may follow new segments, at new ordinals
    for uri, drafts, read in ((f"{prefix}{offset}", chunks, result.end_offset - offset),
                              (pending_uri, waiting, None)):
        if not drafts:
            continue
        doc = LoadedDocument(
            uri=uri, kind="transcript",
            title=info.title or f"{info.agent} session {info.session_id[:8]}",
            text="\n".join(c.text for c in drafts), fmt="transcript",
            created_at=info.started_at, meta={"bytes": read or 0})
        p = writer.prepare(doc, chunks=list(drafts), project=info.project, force=read is None)
        if p is not None:
            prepared.append(p)
    if not waiting and decision != "full":  # no call waits any more: its source goes now,
        _drop_pending(rt, writer, pending_uri)  # before the segment holding its end is stored
    return prepared, next_state(path, st, result), len(chunks) + len(waiting), result.bad_lines


def _drop_pending(rt: Runtime, writer: Writer, uri: str) -> None:
    """Remove a file's pending calls' source, if it has one. A crash before the new
    segment is stored leaves the file's state unrecorded: the next sync reads the same
    bytes again, with the same parser state, and finds the same calls."""
    ids = recall_files.segment_ids(rt.vault, uri)
    if ids:
        src.delete_sources(rt.vault, ids)
        writer.flush_tombstones()
