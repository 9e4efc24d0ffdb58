"""The engine's health at a glance: ``Status``, its alerts, metrics and what of the
vector index and recall's learned reader it holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from engine.api.base import Plain, known


@dataclass(frozen=True)
class Alert(Plain):
    """An active engine alert (``context_engine.vector_db.unavailable``, ...)."""

    name: str
    since: float
    count: int
    last: float
    detail: str = ""


@dataclass(frozen=True)
class Histogram(Plain):
    """One duration histogram over the engine's recent window (milliseconds)."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float


# The serving process's counters, on a status read over the wire: received, replied,
# dropped, in_flight, method:<name>, rejected:<error name>... (ipc/server.py, Server.stats).
ServerStats: TypeAlias = Mapping[str, int]


def _alerts_from(data: Mapping[str, Any] | None) -> dict[str, Alert]:
    """Alerts off the wire: name -> the alert's other fields (the name is the key)."""
    return {k: Alert.from_dict({"name": k, **v}) for k, v in (data or {}).items()}


def _alerts_to(alerts: Mapping[str, Alert]) -> dict[str, Any]:
    """Alerts as the wire carries them: name -> the alert's other fields."""
    return {k: {f: v for f, v in a.to_dict().items() if f != "name"} for k, a in alerts.items()}


@dataclass(frozen=True)
class MetricsSnapshot(Plain):
    """Duration histograms by name, counters, gauges, active alerts."""

    histograms: Mapping[str, Histogram]
    counters: Mapping[str, int]
    gauges: Mapping[str, float]
    alerts: Mapping[str, Alert]
    time: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricsSnapshot:
        d = known(cls, data)
        d["histograms"] = {k: Histogram.from_dict(v)
                           for k, v in (d.get("histograms") or {}).items()}
        d["alerts"] = _alerts_from(d.get("alerts"))
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["alerts"] = _alerts_to(self.alerts)
        return out


@dataclass(frozen=True)
class VectorMemory(Plain):
    """What of the vector index is held in memory: ``kind`` exact | cache | none."""

    kind: str
    state: str
    vectors: int
    bytes: int


@dataclass(frozen=True)
class AdaptStatus(Plain):
    """What recall's learned reader was fitted on (``recall.adapt``): the pairs and
    sessions of the store it learned from and when (``fitted``, None: not fitted yet,
    or dropped with a deleted session until the next sync fits it again)."""

    enabled: bool
    fitted: float | None = None
    pairs: int = 0
    sessions: int = 0
    terms: int = 0  # request words with a learned translation
    map: bool = False  # whether the query map beat the identity (else it is not used)
    seconds: float = 0.0  # the fit's time


@dataclass(frozen=True)
class Status(Plain):
    """The engine's health at a glance (``ctx status``, the Health panel)."""

    data_dir: str
    sources: int
    chunks: int
    tokens: int
    bytes: int
    vectors: int | None  # None while the vector store is down
    vector_backend: str
    vector_store_ok: bool
    vectors_in_memory: VectorMemory
    model: str
    dim: int
    model_loaded: bool
    model_backend: str | None
    model_document_precision: str
    model_query_precision: str
    jobs_active: bool
    ingestion_paused: bool
    store_bytes: int
    alerts: Mapping[str, Alert]
    # Over the wire only: the serving process's counters (received, replied, ...).
    server: ServerStats | None = None
    last_backup: float | None = None  # when the last backup of this store finished
    key_method: str = ""  # how the data key is kept: "keychain" or "passphrase"
    recovery_key: bool = False  # whether a recovery key can unlock the store
    # "<backend>: <why>", e.g. "torch: no ONNX export of MiniLM was found, ..." ("" if fake)
    model_backend_reason: str = ""
    # Sources stored and keyword-searchable whose vectors are not made yet, and their
    # chunks (the vector stage works through them in the background).
    sources_waiting: int = 0
    chunks_waiting: int = 0
    # What recall's learned reader was fitted on (None from an engine that does not say).
    adapt: AdaptStatus | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Status:
        d = known(cls, data)
        d["vectors_in_memory"] = VectorMemory.from_dict(d["vectors_in_memory"])
        if d.get("adapt") is not None:
            d["adapt"] = AdaptStatus.from_dict(d["adapt"])
        d["alerts"] = _alerts_from(d.get("alerts"))
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["alerts"] = _alerts_to(self.alerts)
        if self.server is None:
            del out["server"]
        if self.adapt is None:
            del out["adapt"]
        return out

