"""Where an ONNX export of MiniLM lives, and the hash check it must pass before loading.

An export is a folder holding ``model.onnx`` (the encoder with mean pooling
and L2 normalisation inside the graph; its weights stored as float16 and
widened to float32 when the session loads, so it computes in float32),
``model-int8.onnx`` (the same graph with its weight matrices quantised to
int8, for documents: see ``onnx``), ``tokenizer.json`` (copied from the
shipped model) and ``manifest.json``. The manifest records, at export time,
the sha256 of every file, the sha256 of the safetensors weights they were
exported from, and each model's worst cosine against sentence-transformers on
the probe set. Loading checks all of it: the files' hashes, and that the
source weights are the published MiniLM weights, so that vectors made by this
export may be recorded under MiniLM's name. A version 1 export (no int8 model,
float32 storage) still loads; its documents are embedded in float32.

Folders searched, first found wins: ``embedding.onnx_dir``; the app bundle's
data files (``sys._MEIPASS``); the install's data dir (``share/ctx/onnx`` under
the venv or prefix: where the install step exports it, so every HOME that runs
this install finds it); the user cache dir (where exports were made before).
"""

from __future__ import annotations

import hashlib
import json
import sys
import sysconfig
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import platformdirs

from engine.embedding.config import EmbeddingConfig
from engine.embedding.minilm import MINILM_SHA256
from engine.errors import ConfigError, IntegrityError

MODEL_NAME = "all-MiniLM-L6-v2"
ONNX_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
BUNDLE_SUBDIR = Path("ctx_models") / f"{MODEL_NAME}-onnx"  # inside the bundle's data
MIN_PROBE_COSINE = 0.99999  # an export below this against sentence-transformers is refused
# int8 model's probe floor (else float32): bench.embed_precision, hand-set (docs/tuning.md)
MIN_INT8_PROBE_COSINE = 0.95
MANIFEST_VERSION = 2
_V2_ONLY = ("int8_sha256", "int8_probe_min_cosine")

_verified: set[tuple[object, ...]] = set()
_lock = threading.Lock()


@dataclass(frozen=True)
class Manifest:
    """What an export records about itself (manifest.json)."""

    version: int
    model_name: str
    dim: int
    max_seq_length: int
    source_sha256: str  # model.safetensors it was exported from
    onnx_sha256: str
    tokenizer_sha256: str
    probe_min_cosine: float  # worst cosine vs sentence-transformers on the probe set
    opset: int
    exported_with: dict[str, str]  # package versions at export time
    int8_sha256: str = ""  # the int8 document model; "" when the export has none
    int8_probe_min_cosine: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def bundle_root() -> Path | None:
    """The unpacked data folder of a PyInstaller bundle, or None outside one."""
    if not getattr(sys, "frozen", False):
        return None
    base = getattr(sys, "_MEIPASS", None)
    return Path(base) if base else None


def install_export_dir() -> Path:
    """Where ``python -m engine.embedding.onnx_export`` puts a pip install's export: the
    install's own data dir (the venv, or the prefix Python was installed to), the same
    for every user and HOME that runs this install."""
    return Path(sysconfig.get_path("data")) / "share" / "ctx" / "onnx" / MODEL_NAME


def user_export_dir() -> Path:
    """The user cache dir, where earlier versions exported (still searched last; the
    export goes here only when the install's data dir cannot be written)."""
    cache = platformdirs.user_cache_dir("ctx", appauthor=False)
    return Path(cache) / "onnx" / MODEL_NAME


def candidate_dirs(cfg: EmbeddingConfig) -> list[Path]:
    """Folders that may hold an export, in the order they are tried."""
    out: list[Path] = []
    if cfg.onnx_dir.strip():
        out.append(Path(cfg.onnx_dir.strip()).expanduser())
    root = bundle_root()
    if root is not None:
        out.append(root / BUNDLE_SUBDIR)
    out.append(install_export_dir())
    out.append(user_export_dir())
    return out


def find_export(cfg: EmbeddingConfig) -> Path | None:
    """The first candidate folder holding a manifest (not yet verified), or None.

    A configured ``onnx_dir`` without a manifest is a ConfigError rather than a
    silent fall-through, since the user asked for that folder.
    """
    for i, path in enumerate(candidate_dirs(cfg)):
        if (path / MANIFEST_FILE).is_file():
            return path
        if i == 0 and cfg.onnx_dir.strip():
            raise ConfigError("embedding.onnx_dir holds no ONNX export (manifest.json missing)",
                              key="embedding.onnx_dir")
    return None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        names = {f.name for f in fields(Manifest)}
        if isinstance(raw, dict) and raw.get("version") == 1:
            names -= set(_V2_ONLY)  # a version 1 export: no int8 model
        if not isinstance(raw, dict) or set(raw) != names:
            raise ValueError("unexpected keys")
        return Manifest(**raw)
    except (OSError, ValueError, TypeError) as exc:
        raise IntegrityError(f"ONNX export manifest unreadable: {path}") from exc


def int8_usable(man: Manifest) -> bool:
    """Whether documents may run on the export's int8 model: it has one, and its probe
    check meets today's floor (an older export below a raised floor still loads, with
    documents in float32)."""
    return bool(man.int8_sha256) and man.int8_probe_min_cosine >= MIN_INT8_PROBE_COSINE


def current_export(folder: Path) -> Manifest | None:
    """The export in ``folder`` when it passes :func:`verify_export` and is of today's
    version (so that an export step may keep it); None when absent, damaged or older."""
    try:
        man = verify_export(folder)
    except IntegrityError:
        return None
    return man if man.version == MANIFEST_VERSION else None


def verify_export(folder: Path) -> Manifest:
    """The export's manifest, once its files match it and it comes from MiniLM's weights.

    Raises IntegrityError otherwise. Hashing 80 MB costs about 0.1 s, so a
    folder already verified in this process (same sizes and mtimes) is not
    hashed again.
    """
    man = read_manifest(folder)
    if man.version not in (1, MANIFEST_VERSION) or man.model_name != MODEL_NAME:
        raise IntegrityError(f"ONNX export is not a {MODEL_NAME} export of version 1 or "
                             f"{MANIFEST_VERSION}: {folder}")
    if man.source_sha256 != MINILM_SHA256:
        raise IntegrityError("ONNX export was not made from the published MiniLM weights")
    if man.probe_min_cosine < MIN_PROBE_COSINE:
        raise IntegrityError("ONNX export failed its probe check against sentence-transformers")
    files = {ONNX_FILE: man.onnx_sha256, TOKENIZER_FILE: man.tokenizer_sha256}
    if man.int8_sha256:
        files[INT8_FILE] = man.int8_sha256
    try:
        stats = [(folder / name).stat() for name in files]
    except OSError as exc:
        raise IntegrityError(f"ONNX export incomplete: {folder}") from exc
    key = (str(folder.resolve()), *[(s.st_size, s.st_mtime_ns) for s in stats])
    with _lock:
        if key in _verified:
            return man
        for name, digest in files.items():
            if sha256_file(folder / name) != digest:
                raise IntegrityError(f"{name} does not match the sha256 recorded at export")
        _verified.add(key)
    return man
