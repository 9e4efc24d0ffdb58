"""Deleting sources: what a name (id, uri, path, folder, ``project:NAME``) covers, and
the writer's job that removes it everywhere.

Deleted means gone: rows, chunks and FTS entries (removed from the index
segments), embedding-cache rows no other chunk uses, vectors, and the text a
transcript's sync state held. A path whose content other paths share (an
alias) is dropped and hands the source to them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.flows.ingest.writer import Writer
from engine.flows.keeping.compaction import AUTO_COMPACT_CHUNKS, compact
from engine.flows.keeping.vector_rebuild import chunk_key
from engine.flows.runtime import Runtime
from engine.pathnames import shown
from engine.store.vault import adapt as adapt_rows
from engine.store.vault import aliases, transcripts
from engine.store.vault import sources as src
from engine.store.vault.core import Vault


@dataclass(frozen=True)
class Deletion:
    """What one delete names: stored source ids, and alias paths of other sources."""

    ids: list[int]
    paths: list[str]
    by_path: bool  # named by a path or uri (not an id): shared content may stay

    @property
    def empty(self) -> bool:
        return not self.ids and not self.paths


def resolve(vault: Vault, source: str | int) -> Deletion:
    """The sources and alias paths ``source`` names (nothing changes)."""
    return Deletion(src.resolve(vault, source), _aliases(vault, source),
                    not str(source).strip().isdigit())


def _aliases(vault: Vault, source: str | int) -> list[str]:
    """Paths (stored as aliases of another path's source) that ``source`` names."""
    text = str(source).strip()
    if text.isdigit():
        return []
    candidates = [shown(text)]  # names that are not UTF-8 are stored with \xNN escapes
    resolved = Path(text)
    if "://" not in text and not text.startswith(("text:", "stdin:", "conversation:")):
        resolved = Path(text).expanduser().resolve()
        candidates.append(shown(resolved))
    folder = candidates[-1].rstrip("/") + "/" if resolved.is_dir() else None
    return aliases.matching(vault, candidates, folder)


# a delete step's seconds and chunk counts; hand-set, bench.delete_bench (docs/tuning.md)
STEP_S = 0.05
DELETE_STEP_CHUNKS = 128
STEP_CHUNKS_MIN, STEP_CHUNKS_MAX = 8, 1024
# pause after each step, so that waiting writers and readers run; hand-set (docs/tuning.md)
YIELD_S = 0.002
# chunks deleted between two drops from the vector index; hand-set (docs/tuning.md)
FLUSH_CHUNKS = 8192


def next_step(limit: int, seconds: float) -> int:
    """The chunk count of the next step, after a step of ``limit`` chunks took
    ``seconds``: the count that would have taken ``STEP_S``, moved half way (in ratio)
    from ``limit`` so that one slow or fast step does not swing it, within bounds."""
    aim = limit * STEP_S / max(seconds, 1e-4)
    return int(min(STEP_CHUNKS_MAX, max(STEP_CHUNKS_MIN, (limit * aim) ** 0.5)))


def delete_work(rt: Runtime, writer: Writer, what: Deletion, *,
                resumed: bool = False) -> Callable[[Any, Callable[[], None]], None]:
    """The single writer's job that removes ``what``, a step at a time.

    First (short transactions) every source it names is hidden from every read:
    ``status`` and search stop showing it at once. Then its chunks go a step at a
    time (about ``STEP_S`` seconds each, see ``next_step``), each step its own
    transaction followed by a short pause, and then its vectors; the job's progress
    counts sources as ``sources()`` lists them (``files_done``/``files_total``: a
    transcript once, done with its last segment) and chunks removed (``chunks``). A
    delete cut short (a stop, a crash) resumes at the next open (``resumed``: the
    sources are hidden already). A cancel stops between steps: what it hid stays hidden
    and is removed at the next open.
    """
    key = chunk_key(rt.embedder.name)

    def work(job: Any, progress: Callable[[], None]) -> None:
        gone = list(what.ids)
        if not resumed:
            aliases.drop(rt.vault, what.paths)
            # A path deleted whose content other paths share hands the source to them.
            kept = aliases.keep_aliased(rt.vault, what.ids) if what.by_path else []
            gone = [i for i in what.ids if i not in kept]
            sessions = src.transcript_paths(rt.vault, gone)
            if sessions:  # recall may have learned from them (a fit follows the delete),
                adapt_rows.drop_model(rt.vault)  # whichever of a file's sources they are
            src.mark_deleting(rt.vault, gone)
            src.forget_sync_text(rt.vault, sessions, rt.hasher)
        job.sources = list(gone)
        item_of = transcripts.item_keys(rt.vault, gone)
        left = Counter(item_of.get(sid, str(sid)) for sid in gone)  # parts left per item
        job.files_total = len(left)
        progress()
        unflushed = 0
        limit = DELETE_STEP_CHUNKS
        for sid in gone:
            while True:
                began = time.perf_counter()
                removed = src.delete_step(rt.vault, sid, limit, cache_key=key)
                if removed == limit:  # a full step: its time says how many fit STEP_S
                    limit = next_step(limit, time.perf_counter() - began)
                job.chunks += removed
                unflushed += removed
                if not removed:
                    break
                progress()
                time.sleep(YIELD_S)
            if unflushed >= FLUSH_CHUNKS or sid == gone[-1]:
                writer.flush_tombstones()  # their vectors (reads skip them already)
                unflushed = 0
            item = item_of.get(sid, str(sid))
            left[item] -= 1
            if not left[item]:  # its last part
                job.files_done += 1
            progress()
        if job.chunks >= AUTO_COMPACT_CHUNKS:  # a large delete gives its space back
            compact(rt, job, progress)  # (it saves the vectors and cuts the log too)
            return
        rt.vectors.save_snapshot()  # the sealed vectors lose the deleted ones now
        rt.vault.wipe_log()  # the WAL's old page images held the deleted text
    return work
