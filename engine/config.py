"""ctx configuration: the parts' config sections gathered, and where they are read from.

Each part owns its section (its frozen dataclass, defaults and checks, next to
its code); ``Config`` only assembles them.

Sources, later ones winning: the defaults below, ``config.toml`` in the data
dir, then environment variables (``CTX_EMBEDDER``, ``CTX_CHROMA_URL``, and the
generic ``CTX__SECTION__KEY=value`` whose value is parsed as TOML).

Validation runs once, when a ``Config`` is built: every value that would stop the
store from opening (the vector server's URL, model and cross-encoder folders,
recall folders, tiers, ranges) is refused there, by the part that owns it, with a
ConfigError whose message and ``details["key"]`` name the key. ``check`` is the
one entry for a caller that is about to write a config table (the CLI, Settings).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.backup.config import BackupConfig
from engine.config_base import from_dict, merge, to_dict
from engine.crypto.config import KeyConfig
from engine.embedding.config import EmbeddingConfig
from engine.errors import ConfigError
from engine.ingest.config import ChunkingConfig, IngestConfig, SurrogateConfig
from engine.packing.config import PackingConfig
from engine.recall.config import RecallConfig
from engine.retrieval.config import QueryConfig, RerankConfig, SearchConfig, TierPolicy
from engine.store.config import StoreConfig


@dataclass(frozen=True)
class Config:
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    tiers: TierPolicy = field(default_factory=TierPolicy)
    packing: PackingConfig = field(default_factory=PackingConfig)
    surrogates: SurrogateConfig = field(default_factory=SurrogateConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    keys: KeyConfig = field(default_factory=KeyConfig)
    backup: BackupConfig = field(default_factory=BackupConfig)
    # [ipc]: carried, validated by ipc.wire.IpcConfig (docs/tuning.md, [ipc] and [desktop])
    ipc: dict[str, Any] = field(default_factory=dict)
    # [desktop]: carried, validated by desktop.config_io, like [ipc] (docs/tuning.md)
    desktop: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    def with_overrides(self, overrides: dict[str, Any] | None) -> Config:
        """A copy with ``overrides`` (a nested dict, like the TOML file) applied, validated."""
        if not overrides:
            return self
        return from_dict(Config, merge(self.to_dict(), overrides))


def check(data: Mapping[str, Any]) -> Config:
    """The config a table (as ``config.toml`` holds it: sections of keys) makes, checked as
    store open checks it, before anything is written. Defaults fill what the table
    leaves out; the environment is not read. Raises ConfigError naming the key
    (``details["key"]``, or ``details["keys"]`` for unknown keys)."""
    return from_dict(Config, moved_keys(data))


def moved_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with keys that moved between sections put where they live now.

    ``[desktop] watched_folders`` became ``[ingest] watched_folders`` (the engine
    validates it, and ``ctx serve`` watches too): an old file keeps working. Both set
    is refused, naming the fix.
    """
    if not isinstance(data, Mapping):
        return data  # from_dict refuses it, naming why
    desktop = data.get("desktop")
    if not isinstance(desktop, Mapping) or "watched_folders" not in desktop:
        return dict(data)
    ingest = data.get("ingest")
    ingest = dict(ingest) if isinstance(ingest, Mapping) else {}
    if "watched_folders" in ingest:
        raise ConfigError("desktop.watched_folders has moved to ingest.watched_folders: "
                          "config.toml sets both; keep the list under [ingest] only",
                          key="desktop.watched_folders")
    ingest["watched_folders"] = desktop["watched_folders"]
    rest = {k: v for k, v in desktop.items() if k != "watched_folders"}
    return {**data, "ingest": ingest, "desktop": rest}


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if environ.get("CTX_EMBEDDER"):
        out.setdefault("embedding", {})["model"] = environ["CTX_EMBEDDER"]
    if environ.get("CTX_CHROMA_URL"):
        out.setdefault("store", {}).update(
            vector_backend="http", chroma_url=environ["CTX_CHROMA_URL"]
        )
    for name, raw in environ.items():
        if not name.startswith("CTX__"):
            continue
        parts = [p.lower() for p in name[5:].split("__") if p]
        if len(parts) < 2:
            raise ConfigError(f"{name}: expected CTX__SECTION__KEY")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def load_config(root: Path | None, *, environ: dict[str, str] | None = None,
                overrides: dict[str, Any] | None = None) -> Config:
    """The effective config for data dir ``root`` (file, then env, then ``overrides``)."""
    data: dict[str, Any] = {}
    if root is not None:
        path = root / "config.toml"
        if path.exists():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    data = merge(data, _env_overrides(dict(os.environ if environ is None else environ)))
    if overrides:
        data = merge(data, overrides)
    return from_dict(Config, moved_keys(data))
