"""The ingest part's config sections ([ingest], [chunking], [surrogates])."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError

# Files that pin dependency versions: data for a package manager, not memory.
LOCK_FILES: tuple[str, ...] = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock",
    "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "composer.lock",
    "Gemfile.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock", "Podfile.lock",
    "packages.lock.json", "gradle.lockfile", "conda-lock.yml")
# A generated file says so in its first lines (GitHub linguist's conventions): Go's
# "Code generated ... DO NOT EDIT.", protobuf's "DO NOT EDIT!", "@generated" (not a
# "DO NOT EDIT THIS LINE" beside a version number: 4 such files in site-packages).
GENERATED_MARKERS: tuple[str, ...] = (r"@generated\b", r"\bDO NOT EDIT\b(?! THIS LINE)")


@dataclass(frozen=True)
class IngestConfig:
    """How files are read. The ``blob_*`` thresholds decide which text files hold data
    rather than words (``engine.ingest.blobs``); origin of each: measured on every text
    file of this project's virtualenv site-packages (31,428 files, 2026-11-25,
    ``python -m bench.blob_scan``): the values below skip PEM bundles, minified
    scripts, vocabularies and tables of random tokens, and no prose or hand-written
    code of a 300-file sample read by eye (figures in the bench's output)."""

    max_file_bytes: int = 20_000_000
    excludes: tuple[str, ...] = ()
    respect_gitignore: bool = True
    surrogates: bool = True
    skip_blobs: bool = True
    lock_files: tuple[str, ...] = LOCK_FILES
    generated_markers: tuple[str, ...] = GENERATED_MARKERS
    # base64 lines and runs: cacert.pem 0.73, the next file below 0.2 (a notebook's
    # images count as runs: 0.92)
    blob_base64_share: float = 0.5
    blob_long_line: int = 1000  # characters: a line longer than this is minified-long
    # minified: 7 tenths of the text in long lines and under 1 space in 10 (prose one
    # paragraph a line: 0.15-0.2 spaces; minified JS, JSON vocabularies: under 0.05;
    # a sympy test of long numbers, 0.61 in long lines, is kept)
    blob_minified_share: float = 0.7
    blob_minified_whitespace: float = 0.1
    # tokens per character: prose 0.22-0.25, code up to 0.55 (sympy tests of long
    # numbers), random tokens and numeric tables 0.6-0.7 (tiktoken's ranks 0.69)
    blob_dense_tokens_per_char: float = 0.6
    blob_dense_min_chars: int = 4096  # shorter texts are too small to judge by density
    blob_ascii_share: float = 0.9  # below: not judged as minified or dense (CJK prose)
    # Folders followed for changes (by the app, or `ctx serve`): changed files are
    # ingested again, deleted ones leave the store. Absolute paths; one that does not
    # exist (yet) is reported by the watcher, not refused here (a drive may be out).
    watched_folders: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.max_file_bytes <= 2_000_000_000:
            raise ConfigError("ingest.max_file_bytes must be between 1 and 2000000000")
        for name in ("blob_base64_share", "blob_minified_share", "blob_minified_whitespace",
                     "blob_ascii_share"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ConfigError(f"ingest.{name} must be in (0, 1]")
        if not 0.0 < self.blob_dense_tokens_per_char <= 10.0:
            raise ConfigError("ingest.blob_dense_tokens_per_char must be in (0, 10]")
        if self.blob_long_line < 80 or self.blob_dense_min_chars < 0:
            raise ConfigError("ingest.blob_long_line must be >= 80 and "
                              "ingest.blob_dense_min_chars >= 0")
        for pattern in self.generated_markers:
            try:
                re.compile(pattern)
            except re.error:
                raise ConfigError("ingest.generated_markers holds a pattern that is not a "
                                  "valid regular expression", key="ingest.generated_markers"
                                  ) from None
        seen: set[str] = set()
        for folder in self.watched_folders:
            where = "ingest.watched_folders"
            if not folder.strip():
                raise ConfigError(f"{where}: an entry is empty", key=where)
            if not Path(folder).expanduser().is_absolute():
                raise ConfigError(f"{where}: {folder} is not an absolute path", key=where)
            if folder in seen:
                raise ConfigError(f"{where}: {folder} is listed twice", key=where)
            seen.add(folder)


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunk sizes in cl100k tokens.

    Origin of target_tokens / max_tokens / overlap_tokens (200 / 240 / 0): chosen by
    quality per embedding work on SciFact train (issue 12), with
    ``python -m bench.chunk_sweep --settings 200/240/30,200/240/0,300/360/0,400/480/0,
    1000/1200/0 --sample-every 50 --rounds 2`` (2026-11-23; quality on the
    1,500-abstract subset, every 2nd of the 809 train claims; embedding work over all
    5,183 abstracts, in MiniLM word pieces, cut at its 256):

    | target/max/overlap | word pieces | nDCG@10 | Recall@100 | payload @500/1000/2000 |
    |---|---|---|---|---|
    | 200/240/30 (before) | 2.21 M | 0.852 | 0.990 | 0.849 / 0.891 / 0.923 |
    | 200/240/0 | 2.02 M | 0.853 | 0.990 | 0.859 / 0.889 / 0.926 |
    | 300/360/0 | 1.63 M | 0.848 | 0.990 | 0.844 / 0.889 / 0.926 |
    | 400/480/0 | 1.38 M | 0.848 | 0.988 | 0.844 / 0.879 / 0.909 |
    | 1000/1200/0 | 1.27 M | 0.847 | 0.985 | 0.837 / 0.879 / 0.904 |

    Overlap bought nothing measurable (and overlapping chunks sent together repeat
    text): it goes, for 9% less embedding work. 300/360/0 looked as good on the
    subset for 74% of the work, but on the whole corpus (``python -m bench.scifact``,
    all 809 claims) it lost payload recall: 0.744 / 0.794 / 0.847 at 500 / 1000 /
    2000 tokens against 0.756 / 0.812 / 0.859 at 200/240/30; and its chunks pass
    MiniLM's 256 word pieces, leaving their tails to the keyword lane on long
    documents, which no benchmark here covers. Conversations are unaffected (a turn
    is one chunk unless over max_tokens; LoCoMo's longest turn is 112 tokens), and so
    are transcripts (chunked by ``engine.recall.chunks``).
    """

    target_tokens: int = 200
    max_tokens: int = 240
    overlap_tokens: int = 0
    min_tokens: int = 20

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"chunking.{f.name} must be an integer")
        if not 16 <= self.target_tokens <= self.max_tokens <= 2000:
            raise ConfigError("chunking needs 16 <= target_tokens <= max_tokens <= 2000")
        if self.overlap_tokens < 0 or 2 * self.overlap_tokens >= self.target_tokens:
            raise ConfigError("chunking needs 0 <= overlap_tokens < target_tokens / 2")
        if not 0 <= self.min_tokens <= self.target_tokens:
            raise ConfigError("chunking needs 0 <= min_tokens <= target_tokens")


@dataclass(frozen=True)
class SurrogateConfig:
    """Token caps of the three tiers and the redundancy threshold (Jaccard, 0..1]
    ([surrogates], read by ``engine.surrogates``); hand-set seeds (docs/tuning.md)."""

    full_tokens: int = bounded(240, 1, 100_000)
    gist_tokens: int = bounded(80, 1, 100_000)
    micro_tokens: int = bounded(24, 1, 100_000)
    redundancy: float = bounded(0.6, 0.0, 1.0, lo_open=True)

    def __post_init__(self) -> None:
        check_bounds(self, "surrogates")
        if not self.micro_tokens <= self.gist_tokens <= self.full_tokens:
            raise ConfigError("surrogates tiers must satisfy micro <= gist <= full")
