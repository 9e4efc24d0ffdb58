"""Blobs are not memory: text files that hold data rather than words.

A PEM bundle, a minified script, a lock file, a generated protobuf module or a
table of random tokens decodes as text, but its chunks cost the model as much
as prose (more: they are dense in tokens) and no query is answered by them
(``certifi/cacert.pem``: 848 chunks, 150k tokens of base64, four minutes of
embedding). ``blob_kind`` says which kind of blob a text is, or None; the
loader then skips the file with reason ``blob`` and this kind as its detail.
The thresholds live in ``IngestConfig`` (with their origin); the measures are
pure functions of the text, read on its first ``SAMPLE_CHARS`` characters
where a whole-file read would cost (a 20 MB file is judged by its head).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engine.ingest.config import IngestConfig

SAMPLE_CHARS = 262_144  # characters measured at most (a quarter of a MiB of text)
DENSE_SAMPLE = 8192  # characters tokenized for the density measure (about 2 ms)
HEAD_LINES = 5  # where a generated file says so (GitHub linguist reads the first lines)
BASE64_LINE_MIN = 40  # a line of base64 alone, like PEM's 64-character lines
BASE64_RUN_MIN = 100  # a run of base64 inside other text (a data: URI, a notebook image)

# (the look-behind keeps the search from starting again inside a shorter run)
_B64 = re.compile(rf"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{{{BASE64_LINE_MIN},}}={{0,2}}")
_UPPER, _LOWER, _DIGIT = re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]")


@dataclass(frozen=True)
class BlobMeasures:
    """What the detector reads of a text (for a bench to print, and for tests)."""

    base64_share: float  # characters in base64 lines or long base64 runs
    long_line_share: float  # characters in lines longer than ingest.blob_long_line
    whitespace_share: float
    ascii_share: float
    tokens_per_char: float  # cl100k tokens per character of the sample (0: not measured)


def _looks_base64(s: str) -> bool:
    """Mixed case and digits: base64, not a long number, hex digest or word."""
    return bool(_UPPER.search(s) and _LOWER.search(s) and _DIGIT.search(s))


def _alone(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is its line's only content (spaces aside)."""
    before = text.rfind("\n", 0, start) + 1
    after = text.find("\n", end)
    return not text[before:start].strip() and not text[end:after if after >= 0 else None].strip()


def measure(text: str, cfg: IngestConfig,
            count_tokens: Callable[[str], int] | None = None) -> BlobMeasures:
    sample = text[:SAMPLE_CHARS]
    n = max(1, len(sample))
    b64 = 0
    for m in _B64.finditer(sample):
        s = m.group(0)
        if (len(s) >= BASE64_RUN_MIN or _alone(sample, m.start(), m.end())) and \
                _looks_base64(s):
            b64 += len(s)
    long = sum(len(line) for line in sample.split("\n") if len(line) > cfg.blob_long_line)
    space = sample.count(" ") + sample.count("\n") + sample.count("\t")
    ascii_n = len(sample.encode("ascii", "ignore"))
    dense = 0.0
    if count_tokens is not None and len(text) >= cfg.blob_dense_min_chars:
        head = text[:DENSE_SAMPLE]
        dense = count_tokens(head) / max(1, len(head))
    return BlobMeasures(b64 / n, long / n, space / n, ascii_n / n, dense)


def blob_kind(name: str, text: str, cfg: IngestConfig,
              count_tokens: Callable[[str], int] | None = None) -> str | None:
    """"lock_file", "generated", "base64", "minified", "dense_data", or None for text
    worth remembering. ``name`` is the file's name; ``count_tokens`` (cl100k) enables
    the density measure."""
    if not cfg.skip_blobs:
        return None
    if name.lower() in {n.lower() for n in cfg.lock_files}:
        return "lock_file"
    head = "\n".join(text[:4096].split("\n", HEAD_LINES)[:HEAD_LINES])
    if any(re.search(p, head) for p in cfg.generated_markers):
        return "generated"
    m = measure(text, cfg, count_tokens if len(text) >= cfg.blob_dense_min_chars else None)
    if m.base64_share >= cfg.blob_base64_share:
        return "base64"
    if m.ascii_share < cfg.blob_ascii_share:  # CJK prose has long lines and few spaces
        return None
    # JSON Lines hold one record a line by their format (a chat or an agent session):
    # long lines there are not minification
    lines_format = name.lower().endswith((".jsonl", ".ndjson"))
    if not lines_format and m.long_line_share >= cfg.blob_minified_share and \
            m.whitespace_share < cfg.blob_minified_whitespace:
        return "minified"
    if m.tokens_per_char >= cfg.blob_dense_tokens_per_char:
        return "dense_data"
    return None
