"""Where a chunk sits in its file: the folder it was ingested from, its path under that
folder, and its first and last line.

At ingest, :func:`placed` records in each chunk's meta ``root`` (the folder the
user ingested, absolute; the file's own folder when a file was named) and
``lines`` (``[first, last]``, 1-based, inclusive) for files read as text or code,
where a line number means what an editor shows: the loaders keep such a file's
text as it is, newlines normalised (HTML, DOCX and PDF text is extracted, so their
chunks get no lines). At read time, :func:`place_of` turns a stored chunk's source
and meta into what hits and payload items show. Pure: plain data in and out.
"""

from __future__ import annotations

import dataclasses
import ntpath
import os
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.pathnames import shown
from engine.types import ChunkDraft, LoadedDocument

# Formats whose text is the file's own, line for line (see the module doc).
LINED_FMTS = frozenset({"text", "markdown", "code", "json"})
# Source kinds that are files on disk (their uri is the file's absolute path).
FILE_KINDS = frozenset({"document", "code"})


def with_root(doc: LoadedDocument, root: str) -> LoadedDocument:
    """``doc`` remembering the folder it was ingested from (``meta["root"]``)."""
    return dataclasses.replace(doc, meta={**doc.meta, "root": root})


def root_of(path: Path, given: Sequence[Path]) -> str:
    """The ingested folder ``path`` was found under: the deepest of the ``given`` folders
    holding it, else (a file named by itself) the file's own folder."""
    best: Path | None = None
    for g in given:
        if g != path and path.is_relative_to(g) and (best is None or len(g.parts) > len(best.parts)):
            best = g
    return shown(best if best is not None else path.parent)


def placed(doc: LoadedDocument, drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    """``drafts`` with ``root`` (when ``doc`` has one) and ``lines`` (for a format whose
    text is the file's own) in their meta; the text and offsets are unchanged."""
    root = doc.meta.get("root")
    if root is None:
        return drafts
    lined = doc.fmt in LINED_FMTS
    text = doc.text
    pos, line = 0, 1  # line number at offset pos (chunks come in source order)
    out = []
    for d in drafts:
        meta: dict[str, Any] = {**d.meta, "root": root}
        if lined:
            if d.start < pos:
                pos, line = 0, 1
            line += text.count("\n", pos, d.start)
            pos = d.start
            last = line + text.count("\n", d.start, d.start + max(0, len(d.text) - 1))
            meta["lines"] = [line, last]
        out.append(dataclasses.replace(d, meta=meta))
    return out


def _relative(uri: str, root: str) -> str | None:
    """``uri`` relative to ``root`` in ``/`` form, or None when it is not under it."""
    flavour = ntpath if (ntpath.isabs(root) and not root.startswith("/")) else posixpath
    try:
        rel = flavour.relpath(uri, root)
    except ValueError:  # another drive
        return None
    if rel == os.curdir or rel.startswith(os.pardir):
        return None
    # A Windows path in / form; a POSIX name keeps its backslashes (the \xNN escapes of a
    # name that is not UTF-8, engine.pathnames)
    return rel.replace("\\", "/") if flavour is ntpath else rel


def place_of(uri: str, source_kind: str, meta: Mapping[str, Any]
             ) -> tuple[str, str | None, tuple[int, int] | None]:
    """(path, root, lines) of a stored chunk: its file's path relative to ``root``
    (the absolute path when the root was not recorded, or the file lies elsewhere now),
    the ingested folder, and its line range; ("", None, None) for a source that is not
    a file (a text, a conversation, a transcript)."""
    if source_kind not in FILE_KINDS or not (posixpath.isabs(uri) or ntpath.isabs(uri)):
        return "", None, None
    root = meta.get("root")
    root = root if isinstance(root, str) and root else None
    rel = _relative(uri, root) if root is not None else None
    lines = meta.get("lines")
    span = None
    if (isinstance(lines, (list, tuple)) and len(lines) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in lines)):
        span = (int(lines[0]), int(lines[1]))
    return (rel if rel is not None else uri), root, span


def merged_lines(spans: Sequence[tuple[int, int] | None]) -> tuple[int, int] | None:
    """The line range covering ``spans`` (chunks merged into one item); None if any lacks one."""
    if not spans or any(s is None for s in spans):
        return None
    return min(s[0] for s in spans if s), max(s[1] for s in spans if s)
