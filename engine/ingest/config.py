"""The ingest part's config sections ([ingest], [chunking], [surrogates])."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError

# Files that pin dependency versions: data for a package manager, not memory.
LOCK_FILES: tuple[str, ...] = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock",
    "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "composer.lock",
    "Gemfile.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock", "Podfile.lock",
    "packages.lock.json", "gradle.lockfile", "conda-lock.yml")
# a generated file's first-line marks: GitHub linguist's conventions (docs/tuning.md)
GENERATED_MARKERS: tuple[str, ...] = (r"@generated\b", r"\bDO NOT EDIT\b(?! THIS LINE)")


@dataclass(frozen=True)
class IngestConfig:
    """How files are read. The ``blob_*`` thresholds decide which text files hold data
    rather than words (``engine.ingest.blobs``); measured on 31,428 site-packages files,
    ``python -m bench.blob_scan`` (docs/tuning.md)."""

    max_file_bytes: int = bounded(20_000_000, 1, 2_000_000_000)
    excludes: tuple[str, ...] = ()
    respect_gitignore: bool = True
    surrogates: bool = True
    skip_blobs: bool = True
    lock_files: tuple[str, ...] = LOCK_FILES
    generated_markers: tuple[str, ...] = GENERATED_MARKERS
    # base64 lines and runs: cacert.pem 0.73, the next file below 0.2 (docs/tuning.md)
    blob_base64_share: float = bounded(0.5, 0.0, 1.0, lo_open=True)
    # characters: a line longer than this is minified-long
    blob_long_line: int = bounded(1000, 80)
    # minified: 7 tenths of the text in long lines, under 1 space in 10 (docs/tuning.md)
    blob_minified_share: float = bounded(0.7, 0.0, 1.0, lo_open=True)
    blob_minified_whitespace: float = bounded(0.1, 0.0, 1.0, lo_open=True)
    # tokens per character: prose 0.22-0.25, random tokens 0.6-0.7 (docs/tuning.md)
    blob_dense_tokens_per_char: float = bounded(0.6, 0.0, 10.0, lo_open=True)
    blob_dense_min_chars: int = bounded(4096, 0)  # shorter texts: too small to judge
    # below: not judged as minified or dense (CJK prose)
    blob_ascii_share: float = bounded(0.9, 0.0, 1.0, lo_open=True)
    # folders followed for changes; a missing one is the watcher's to report (docs/tuning.md)
    watched_folders: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_bounds(self, "ingest")
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
    """Chunk sizes in cl100k tokens. target / max / overlap (200 / 240 / 0): SciFact
    train, ``bench.chunk_sweep`` (docs/tuning.md)."""

    target_tokens: int = bounded(200, 16, 2000)
    max_tokens: int = bounded(240, 16, 2000)
    overlap_tokens: int = bounded(0, 0)
    min_tokens: int = bounded(20, 0)  # hand-set: smaller sections are chunked together

    def __post_init__(self) -> None:
        check_bounds(self, "chunking")
        if self.target_tokens > self.max_tokens:
            raise ConfigError("chunking needs 16 <= target_tokens <= max_tokens <= 2000",
                              key="chunking.max_tokens")
        if 2 * self.overlap_tokens >= self.target_tokens:
            raise ConfigError("chunking needs 0 <= overlap_tokens < target_tokens / 2",
                              key="chunking.overlap_tokens")
        if self.min_tokens > self.target_tokens:
            raise ConfigError("chunking needs 0 <= min_tokens <= target_tokens",
                              key="chunking.min_tokens")


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
