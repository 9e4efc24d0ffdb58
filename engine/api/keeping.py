"""What the store holds and how it is kept: sources, deletes, compaction, repair, backups,
restore, export, key changes and the audit log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.api.base import Plain, known


@dataclass(frozen=True)
class SourceInfo(Plain):
    """A stored source; ``stage`` (``SOURCE_STAGES``): "keyword" while its vectors are
    being made (found by keyword only), "ready" once both lanes have it. A session's
    transcript is one source however many syncs stored it: ``segments`` counts them (1
    for any other source), its uri is ``transcript:<path>``, its sizes are summed."""

    id: int
    uri: str
    kind: str
    title: str
    fmt: str
    content_hash: str
    bytes: int
    created_at: float | None
    ingested_at: float
    n_chunks: int
    tokens: int
    project: str | None
    stage: str = "ready"
    segments: int = 1


@dataclass(frozen=True)
class DeleteResult(Plain):
    """What a delete removes: how many sources and paths, the source ids, and the job
    (kind "delete") that removes them, a step at a time."""

    deleted: int
    sources: tuple[int, ...] = ()
    job: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeleteResult:
        return cls(int(data["deleted"]), tuple(int(s) for s in data.get("sources") or ()),
                   str(data.get("job") or ""))


@dataclass(frozen=True)
class CompactResult(Plain):
    """A compaction (kind "compact" job): the store's bytes before and after (after is
    0 until the job ends; follow ``job``)."""

    job: str
    bytes_before: int = 0
    bytes_after: int = 0


@dataclass(frozen=True)
class RepairResult(Plain):
    """What a vector rebuild did (``ctx repair``): vectors written, chunks embedded again.

    ``cache_rows_dropped`` only for a full repair; ``set_aside``: the damaged
    parts moved away first (part -> where), only from ``repair_store``.
    """

    reason: str
    job: str
    vectors: int = 0
    embedded: int = 0
    seconds: float = 0.0
    cache_rows_dropped: int | None = None
    set_aside: Mapping[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items()
                if v is not None or k not in ("cache_rows_dropped", "set_aside")}


# -- keeping the data: backups, exports, key changes -----------------------------------

@dataclass(frozen=True)
class BackupResult(Plain):
    """A backup file written (``ctx backup``) or checked (``ctx backup --verify``).

    ``store_id`` names the store (it lasts through key rotations), ``key_id`` the
    data key the backup is encrypted under; ``created`` is when it was taken.
    """

    path: str
    bytes: int
    created: float
    store_id: str
    key_id: str
    sources: int = 0
    chunks: int = 0
    vectors: int = 0
    seconds: float = 0.0
    verified: bool = False
    format: int = 1


@dataclass(frozen=True)
class RestoreResult(Plain):
    """A backup restored into ``data_dir`` (``replaced``: where the store it replaced went)."""

    data_dir: str
    store_id: str
    key_id: str
    created: float
    sources: int
    chunks: int
    vectors: int
    bytes: int
    seconds: float
    replaced: str | None = None


@dataclass(frozen=True)
class ExportResult(Plain):
    """Sources written out as plaintext (``ctx export``): where, how many, in what format."""

    path: str
    format: str
    sources: int
    chunks: int
    bytes: int
    files: int = 1


@dataclass(frozen=True)
class KeyChangeResult(Plain):
    """A change of how the data key is kept (``what``: passphrase, use-keychain,
    use-passphrase, recovery, rotate). ``recovery_key`` holds a new recovery key, to be
    shown once; it is never sent over the wire (key changes run where the store is).
    ``job``: the job (kind "rotate") of a rotation the running engine does."""

    what: str
    key_id: str
    seconds: float = 0.0
    old_key_id: str = ""
    method: str = ""
    has_recovery: bool = False
    recovery_key: str = field(default="", repr=False)
    job: str = ""


@dataclass(frozen=True)
class AuditEntry(Plain):
    """One audit record: who asked what and when (ids and counts, never content)."""

    time: float
    method: str
    caller_pid: int | None
    ids: tuple[str, ...]
    counts: Mapping[str, int]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditEntry:
        d = known(cls, data)
        d["ids"] = tuple(str(i) for i in d.get("ids") or ())
        return cls(**d)

