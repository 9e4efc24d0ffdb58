"""The engine's public results and events: typed, frozen, plain data.

Every result that ``ContextEngine`` (in process) and ``ipc``'s ``RemoteEngine``
(over the wire) return is one of these classes, so a caller reads attributes,
never string keys, whichever engine answered. ``to_dict()`` is the JSON form
that travels on the wire (docs/wire.md) and ``from_dict()`` rebuilds the object
from it; unknown keys are ignored on the way in (a newer minor version of the
protocol only adds fields).

Events are what the engine announces through ``ContextEngine.subscribe``: a
job moved, sources changed, a build finished, an alert was raised or cleared.
They carry ids, counts and names, never the text of a source or a query.

The map (each module imports only those above it):

- ``base``: ``Plain`` (to_dict / from_dict), ``ErrorInfo``, ``FileIssue``, ``SourceRef``,
  ``SOURCE_STAGES``;
- ``jobs``: ``JobSnapshot``, ``JobProgress`` and ``describe_progress``, the job states;
- ``results``: reading: ``SearchHit``, ``Payload`` and ``PayloadItem``, ``RecallHit``,
  ``RecallResult``, ``SyncResult``, ``TIERS``;
- ``keeping``: the store and its keeping: ``SourceInfo``, ``DeleteResult``,
  ``CompactResult``, ``RepairResult``, ``BackupResult``, ``RestoreResult``,
  ``ExportResult``, ``KeyChangeResult``, ``AuditEntry``;
- ``status``: ``Status``, ``Alert``, ``Histogram``, ``MetricsSnapshot``, ``VectorMemory``,
  ``AdaptStatus``, ``ServerStats``;
- ``notices``: the events: ``Event``, ``JobChanged``, ``SourcesChanged``, ``BuildItem``,
  ``BuildDone``, ``Warming``, ``AlertRaised``, ``AlertCleared``, ``WatchChanged`` (with
  ``WatchReport``); ``UPGRADE_LOGGER``, the logger of a store's upgrade at its open.

``from engine.api import X`` reads every one of them from here.
"""

from __future__ import annotations

from engine.api.base import SOURCE_STAGES, ErrorInfo, FileIssue, SourceRef
from engine.api.jobs import (
    FINAL_JOB_STATES,
    JOB_STAGES,
    JOB_STATES,
    RATE_AFTER_S,
    RATE_AFTER_UNITS,
    JobProgress,
    JobSnapshot,
    JobState,
    describe_progress,
)
from engine.api.keeping import (
    AuditEntry,
    BackupResult,
    CompactResult,
    DeleteResult,
    ExportResult,
    KeyChangeResult,
    RepairResult,
    RestoreResult,
    SourceInfo,
)
from engine.api.notices import (
    UPGRADE_LOGGER,
    AlertCleared,
    AlertRaised,
    BuildDone,
    BuildItem,
    Event,
    JobChanged,
    SourcesChanged,
    Warming,
    WatchChanged,
    WatchReport,
)
from engine.api.results import (
    TIERS,
    Payload,
    PayloadItem,
    RecallHit,
    RecallResult,
    SearchHit,
    SyncResult,
)
from engine.api.status import (
    AdaptStatus,
    Alert,
    Histogram,
    MetricsSnapshot,
    ServerStats,
    Status,
    VectorMemory,
)

__all__ = [
    "FINAL_JOB_STATES", "JOB_STAGES", "JOB_STATES", "RATE_AFTER_S", "RATE_AFTER_UNITS",
    "SOURCE_STAGES", "TIERS", "UPGRADE_LOGGER", "AdaptStatus", "Alert", "AlertCleared", "AlertRaised",
    "AuditEntry", "BackupResult", "BuildDone", "BuildItem", "CompactResult", "DeleteResult",
    "ErrorInfo", "Event", "ExportResult", "FileIssue", "Histogram", "JobChanged",
    "JobProgress", "JobSnapshot", "JobState", "KeyChangeResult", "MetricsSnapshot",
    "Payload", "PayloadItem", "RecallHit", "RecallResult", "RepairResult", "RestoreResult",
    "SearchHit", "ServerStats", "SourceInfo", "SourceRef", "SourcesChanged", "Status",
    "SyncResult",
    "VectorMemory", "Warming", "WatchChanged", "WatchReport", "describe_progress",
]
