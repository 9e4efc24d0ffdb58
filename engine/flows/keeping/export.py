"""Sources out of the store as plaintext files (``ctx export``), and back in (``ctx ingest``).

This is the one place where the store's text leaves its encryption, and only to
the path the user named (the CLI and the app warn first). Two formats:

- ``jsonl``: one file; a first line that says what it is (``{"ctx_export": 1, ...}``),
  then one source per line: its uri, kind, title, project, dates, the text (as
  its chunks rebuild it) and the chunks themselves and surrogates, exactly as
  stored. ``ctx ingest`` of such a file stores those sources again as they were:
  same uris, kinds, titles, chunks and surrogates (then embedded again). A session's
  transcript, stored as one segment per sync, is one line per segment, on
  consecutive lines (so an import keeps the segments a later sync builds on).
- ``markdown``: a folder with one ``.md`` file per source (under a folder per
  kind), its details in a front matter, then its text: to read, or take to
  another tool. A transcript is one file, its segments' texts in order.

Either way a transcript counts as one source (``ExportResult.sources``), as
``sources()`` lists it, with all of its segments (``store/vault/transcripts.py``).

Files are written owner-only; a jsonl export appears under its name only once
whole (written as ``NAME.partial`` first).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.api import ExportResult, SourceInfo
from engine.errors import InvalidInput
from engine.flows.ingest.writer import Prepared, Writer, batched
from engine.flows.jobs import Job
from engine.flows.runtime import Runtime
from engine.store.vault import export_rows as rows
from engine.store.vault import sources as src
from engine.store.vault import transcripts
from engine.types import SOURCE_KINDS, ChunkDraft, LoadedDocument

log = logging.getLogger("ctx.export")

FORMATS = ("jsonl", "markdown")
# a memory item to export: as ``sources()`` lists it, and the records of its sources
Item = tuple[SourceInfo, list[dict[str, Any]]]
EXPORT_FORMAT = 1
MAX_FIRST_LINE = 64 * 1024


def rebuild_text(chunks: Sequence[Mapping[str, Any]]) -> str:
    """A source's text from its chunks: laid at their offsets where they are slices of
    one text (overlaps kept once, gaps as line breaks), else joined by blank lines."""
    out = ""
    end = 0
    since_gap = 0  # characters of ``out`` since the last gap: chunk text, in place
    for c in sorted(chunks, key=lambda ch: ch["ordinal"]):
        start, text = c["start"], c["text"]
        stop = start + len(text)
        if start >= end:
            gap = "" if not out or start == end else ("\n\n" if start - end >= 2 else " ")
            since_gap = (since_gap if not gap else 0) + len(text)
            out += gap + text
        else:
            overlap = end - start
            k = min(overlap, len(text))
            at = len(out) - overlap
            if overlap > since_gap or out[at:at + k] != text[:k]:
                return "\n\n".join(ch["text"] for ch in chunks)  # not slices of one text
            rest = text[overlap:]
            out += rest
            since_gap += len(rest)
        end = max(end, stop)
    return out


def _record(rt: Runtime, source: rows.ExportSource) -> dict[str, Any]:
    s = source.info
    chunks = rows.chunks(rt.vault, s.id)
    return {
        "uri": s.uri, "kind": s.kind, "title": s.title, "fmt": s.fmt, "project": s.project,
        "created_at": s.created_at, "ingested_at": s.ingested_at,
        "content_hash": s.content_hash, "bytes": s.bytes, "meta": source.meta,
        "text": rebuild_text(chunks),
        "chunks": chunks,
        "surrogates": rows.surrogates(rt.vault, s.id),
    }


def export_sources(rt: Runtime, path: str | os.PathLike[str], fmt: str = "jsonl", *,
                   kind: str | None = None, project: str | None = None,
                   progress: Callable[[int], None] | None = None) -> ExportResult:
    """Write the ready sources (of ``kind`` and ``project``, if given) to ``path``."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    if kind is not None and kind not in SOURCE_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(SOURCE_KINDS)}", field="kind")
    dest = Path(path).expanduser().resolve()
    if dest == rt.root or rt.root in dest.parents:
        raise InvalidInput("an export must not be written inside the data dir", field="path")
    items = _items(rt, kind, project)
    if fmt == "jsonl":
        return _jsonl(dest, items, kind, project, progress)
    return _markdown(dest, items, progress)


def _items(rt: Runtime, kind: str | None, project: str | None
           ) -> Iterator[Item]:
    """Each memory item to export, in id order, as ``sources()`` lists it and with its
    records: a source alone, or every ready segment of a transcript file (at its first
    segment's place, in id order; ``transcripts.grouped`` says what the file is). A
    session is exported whole: every segment of a file that one segment of ``kind`` and
    ``project`` names, whatever project the others carry."""
    files: set[str] = set()
    for source in rows.sources(rt.vault, kind=kind, project=project):
        name = transcripts.file_uri(source.info.uri, source.info.kind)
        if name is None:
            yield source.info, [_record(rt, source)]
        elif name not in files:
            files.add(name)
            segments = rows.by_ids(rt.vault, transcripts.segments_of(rt.vault, name))
            segments = segments or [source]
            [item] = transcripts.grouped([s.info for s in segments])
            yield item, [_record(rt, s) for s in segments]


def _merged(item: SourceInfo, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One record for a memory item: a source's own, or a transcript file's (its details
    as ``sources()`` lists them, ``segments`` counting them, the texts in order)."""
    if transcripts.file_uri(records[0]["uri"], records[0]["kind"]) is None:
        return records[0]
    return {**records[0], "uri": item.uri, "title": item.title, "project": item.project,
            "created_at": item.created_at, "ingested_at": item.ingested_at,
            "segments": item.segments,
            "text": "\n\n".join(t for r in records if (t := r["text"].strip("\n"))),
            "chunks": [c for r in records for c in r["chunks"]]}


def _private(path: Path) -> Any:
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w",
                     encoding="utf-8", newline="\n")


def _jsonl(dest: Path, items: Iterator[Item], kind: str | None,
           project: str | None, progress: Callable[[int], None] | None) -> ExportResult:
    if dest.exists():
        raise InvalidInput(f"{dest} exists: an export never writes over a file", field="path")
    if not dest.parent.is_dir():
        raise InvalidInput(f"the folder {dest.parent} does not exist", field="path")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    n = chunks = 0
    try:
        with _private(partial) as out:
            out.write(json.dumps({"ctx_export": EXPORT_FORMAT, "exported_at": time.time(),
                                  "kind": kind, "project": project}) + "\n")
            for _, records in items:
                for rec in records:
                    out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    chunks += len(rec["chunks"])
                n += 1
                if progress is not None:
                    progress(n)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return ExportResult(str(dest), "jsonl", n, chunks, dest.stat().st_size)


_UNSAFE = re.compile(r"[^\w.-]+")


def _file_name(rec: dict[str, Any], taken: set[str]) -> str:
    stem = _UNSAFE.sub("-", str(rec["title"]) or "untitled").strip("-.")[:80] or "untitled"
    name, i = f"{stem}.md", 2
    while name.lower() in taken:
        name, i = f"{stem}-{i}.md", i + 1
    taken.add(name.lower())
    return name


def _markdown(dest: Path, items: Iterator[Item],
              progress: Callable[[int], None] | None) -> ExportResult:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInput(f"{dest} exists and is not an empty folder", field="path")
    dest.mkdir(mode=0o700, parents=False, exist_ok=True)
    os.chmod(dest, 0o700)
    taken: dict[str, set[str]] = {}
    n = chunks = size = 0
    for rec in (_merged(*item) for item in items):
        folder = dest / rec["kind"]
        if rec["kind"] not in taken:
            folder.mkdir(mode=0o700, exist_ok=True)
            taken[rec["kind"]] = set()
        path = folder / _file_name(rec, taken[rec["kind"]])
        front = {k: rec[k] for k in ("title", "uri", "kind", "project", "created_at",
                                     "ingested_at", "segments") if rec.get(k) is not None}
        with _private(path) as out:
            out.write("---\n" + "".join(f"{k}: {json.dumps(v, ensure_ascii=False)}\n"
                                        for k, v in front.items()) + "---\n\n")
            out.write(rec["text"].rstrip("\n") + "\n")
        n, chunks, size = n + 1, chunks + len(rec["chunks"]), size + path.stat().st_size
        if progress is not None:
            progress(n)
    return ExportResult(str(dest), "markdown", n, chunks, size, files=n)


# -- back in ------------------------------------------------------------------------------

def is_export(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file whose first line says it is a ctx jsonl export."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(MAX_FIRST_LINE)
        head = json.loads(first.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(head, dict) and head.get("ctx_export") == EXPORT_FORMAT


def _documents(path: Path) -> Iterator[tuple[LoadedDocument, list[ChunkDraft], dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        fh.readline()
        for n, line in enumerate(fh, 2):
            try:
                rec = json.loads(line)
                doc = LoadedDocument(
                    uri=str(rec["uri"]), kind=str(rec["kind"]), title=str(rec["title"]),
                    text=str(rec["text"]), fmt=str(rec["fmt"]), created_at=rec["created_at"],
                    meta={**dict(rec.get("meta") or {}), "bytes": int(rec.get("bytes") or 0)})
                drafts = [ChunkDraft(str(c["text"]), int(c["ordinal"]), int(c["tokens"]),
                                     str(c["kind"]), str(c["heading"]), int(c["start"]),
                                     c["time"], dict(c["meta"] or {})) for c in rec["chunks"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInput(f"{path}: line {n} is not a source of a ctx export "
                                   f"({type(exc).__name__})", field="paths") from None
            if doc.kind not in SOURCE_KINDS:
                raise InvalidInput(f"{path}: line {n} has an unknown kind", field="paths")
            yield doc, drafts, rec


def import_work(rt: Runtime, writer: Writer, files: Sequence[str],
                then: Callable[[Job, Callable[[], None]], None] | None = None
                ) -> Callable[[Job, Callable[[], None]], None]:
    """A job body that stores the sources of jsonl exports as they were (a source whose
    uri holds the same content already is left as it is), then runs ``then``."""
    def work(job: Job, progress: Callable[[], None]) -> None:
        def prepared() -> Iterator[Prepared]:
            for path in files:
                for doc, drafts, rec in _documents(Path(path)):
                    job.check()
                    job.files_total += 1
                    same = src.versions(rt.vault, doc.uri)
                    if same and same[0][1] == rec.get("content_hash"):
                        job.files_unchanged += 1
                        job.files_done += 1
                        continue
                    item = writer.prepare(doc, chunks=drafts, project=rec.get("project"),
                                          force=True)
                    assert item is not None
                    item.doc_hash = str(rec.get("content_hash") or item.doc_hash)
                    item.surrogates = rec.get("surrogates") or None
                    yield item

        def on_written(p: Prepared, sid: int) -> None:
            job.files_done += 1
            job.chunks += len(p.chunks)
            job.sources.append(sid)
            progress()

        for group in batched(prepared(), 64):
            writer.write_batch(group, on_written, job.check)
        if then is not None:  # the other paths of the same call, counted after these
            done = (job.files_total, job.files_done, job.files_unchanged)
            then(job, progress)
            job.files_total += done[0]
            job.files_done += done[1]
            job.files_unchanged += done[2]
    return work
