"""ctx's core: the context engine, free of Qt and ZeroMQ.

The public API is what ``__all__`` names; everything else is internal, and
ipc/ and desktop/ import nothing else. Heavy modules load on first use, so
``import engine`` stays cheap.

- the engine: ``ContextEngine`` (and ``EngineAPI``, the protocol it shares with
  ipc's ``RemoteEngine``), ``init_store``, ``repair_store``, ``probe_store``;
- its results and events (engine.api): ``JobSnapshot``, ``Payload``, ``SearchHit``,
  ``RecallResult``, ``Status``..., ``JobChanged``, ``BuildDone``, ``AlertRaised``...;
- who calls: ``caller`` (a context manager the hosts of other processes use);
- the wire form of any result (or list or mapping of them): ``jsonable``;
- errors: ``CtxError`` and every class under it, ``error_from_dict``;
- config: ``Config``, ``load_config``, ``check_config`` (a table checked as store open
  checks it, before it is written), ``parse_config_section``;
- what build_context takes beside its query: ``LiveItem``, ``ConversationTurn`` (or the
  same fields as mappings), ``LiveItems`` and ``ConversationTurns`` (a sequence of either);
- paths, kinds and tokens a client needs: ``resolve_data_dir``, ``LIVE_KINDS``...;
- the limits of what a caller may ask (engine/limits.py): ``LIMITS`` (``max_budget``,
  ``max_query_chars``, ``max_live_items``...; also by their former names ``MIN_BUDGET``,
  ``MAX_BUDGET``...);
- keeping the data: ``restore_backup``, ``verify_backup_file``, ``rotate_key``,
  ``prepare_rotation`` (then ``ContextEngine.rotate_key``),
  ``change_passphrase``, ``use_keychain``, ``use_passphrase``, ``renew_recovery_key``,
  ``generate_recovery_key`` (and ``ContextEngine.backup`` / ``export``), the app's
  backup schedule (``BackupConfig``, ``backup_due``, ``backups_to_prune``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.lazy import resolve
from engine.offline import keep_offline

keep_offline()  # before any library loads: no telemetry, no download (engine/offline.py)

_API = ("Alert", "AlertCleared", "AlertRaised", "AuditEntry", "BackupResult", "BuildDone",
        "BuildItem", "CompactResult", "DeleteResult", "ExportResult", "KeyChangeResult", "RestoreResult", "ErrorInfo", "Event", "FileIssue", "Histogram", "JobChanged",
        "JobProgress", "JobSnapshot", "MetricsSnapshot", "Payload", "PayloadItem", "RecallHit",
        "RecallResult", "RepairResult", "SearchHit", "ServerStats", "SourceInfo", "SourcesChanged",
        "Status",
        "SyncResult", "VectorMemory", "AdaptStatus", "Warming", "WatchChanged", "WatchReport",
        "FINAL_JOB_STATES", "JOB_STATES",
        "TIERS", "UPGRADE_LOGGER")
_ERRORS = ("CtxError", "ConfigError", "InvalidInput", "EmptyQuery", "InvalidBudget",
           "LiveSnapshotTooLarge", "InvalidItemKind", "NotUtf8", "NotFound", "StoreLocked",
           "WrongKey", "KeyUnavailable", "StoreNotInitialized", "StoreDamaged", "NotAStore",
           "KeyRecordDamaged", "VaultMissing", "VaultDamaged", "StoreTooNew",
           "VectorsDamaged", "NoSpace", "IntegrityError", "ModelMismatch",
           "VectorStoreUnavailable", "IngestFailed", "FileRejected", "EngineClosed",
           "InternalError", "RecoveryKeyInvalid", "BackupDamaged", "BackupMismatch",
           "StoreExists", "error_from_dict", "qualified_field")
# Keeping the data: backups, restore, and how the data key is kept.
_KEEPING = {
    "restore_backup": "engine.flows.keeping.restore", "verify_backup_file": "engine.flows.keeping.backup:"
    "verify_backup", "rotate_key": "engine.flows.keeping.key_changes",
    "prepare_rotation": "engine.flows.keeping.key_changes",
    "change_passphrase": "engine.flows.keeping.key_changes", "use_keychain": "engine.flows.keeping.key_changes",
    "use_passphrase": "engine.flows.keeping.key_changes", "renew_recovery_key": "engine.flows.keeping.key_changes",
    "generate_recovery_key": "engine.crypto.recovery:new_recovery_key",
    "looks_like_recovery_key": "engine.crypto.recovery", "BackupConfig": "engine.backup.config",
    "backups_to_prune": "engine.backup.schedule", "backup_due": "engine.backup.schedule",
}

# Public name -> "module" (same name there) or "module:name".
_WHERE: dict[str, str] = {
    "ContextEngine": "engine.facade", "init_store": "engine.facade",
    "repair_store": "engine.facade", "probe_store": "engine.access",
    "EngineAPI": "engine.protocol", "ENGINE_METHODS": "engine.protocol",
    "caller": "engine.calls", "Caller": "engine.calls",
    "jsonable": "engine.api.base",
    "Config": "engine.config", "load_config": "engine.config",
    "check_config": "engine.config:check",
    "parse_config_section": "engine.config_base:from_dict",
    "bounded": "engine.config_base", "check_bounds": "engine.config_base",
    **{n: "engine.types" for n in ("LiveItem", "ConversationTurn", "LiveItems",
                                    "ConversationTurns", "LIVE_KINDS", "SOURCE_KINDS")},
    "LIMITS": "engine.limits",
    **{n: "engine.limits" for n in ("MIN_BUDGET", "MAX_BUDGET", "MAX_QUERY_CHARS",
                                     "MAX_LIVE_ITEMS", "MAX_LIVE_BYTES",
                                     "MAX_CONVERSATION_TURNS")},
    "TokenCounter": "engine.tokens",
    "resolve_data_dir": "engine.paths:data_dir", "shown_path": "engine.pathnames:shown",
    "keychain_available": "engine.crypto.keys", "headless_passphrase": "engine.crypto.keys",
    "headless_key_available": "engine.crypto.keys", "headless_key_file": "engine.crypto.keys",
    "default_key_file": "engine.paths",
    **_KEEPING,
    **{n: "engine.api" for n in _API},
    **{n: "engine.errors" for n in _ERRORS},
}

if TYPE_CHECKING:  # what checkers and IDEs see: every public name with its type
    # (tests/test_public_api.py: exactly __all__, each from where _WHERE loads it)
    from engine.access import probe_store
    from engine.api import (
        FINAL_JOB_STATES,
        JOB_STATES,
        TIERS,
        UPGRADE_LOGGER,
        AdaptStatus,
        Alert,
        AlertCleared,
        AlertRaised,
        AuditEntry,
        BackupResult,
        BuildDone,
        BuildItem,
        CompactResult,
        DeleteResult,
        ErrorInfo,
        Event,
        ExportResult,
        FileIssue,
        Histogram,
        JobChanged,
        JobProgress,
        JobSnapshot,
        KeyChangeResult,
        MetricsSnapshot,
        Payload,
        PayloadItem,
        RecallHit,
        RecallResult,
        RepairResult,
        RestoreResult,
        SearchHit,
        ServerStats,
        SourceInfo,
        SourcesChanged,
        Status,
        SyncResult,
        VectorMemory,
        Warming,
        WatchChanged,
        WatchReport,
    )
    from engine.api.base import jsonable
    from engine.backup.config import BackupConfig
    from engine.backup.schedule import backup_due, backups_to_prune
    from engine.calls import Caller, caller
    from engine.config import Config, load_config
    from engine.config import check as check_config
    from engine.config_base import bounded, check_bounds
    from engine.config_base import from_dict as parse_config_section
    from engine.crypto.keys import (
        headless_key_available,
        headless_key_file,
        headless_passphrase,
        keychain_available,
    )
    from engine.crypto.recovery import (
        looks_like_recovery_key,
    )
    from engine.crypto.recovery import (
        new_recovery_key as generate_recovery_key,
    )
    from engine.errors import (
        BackupDamaged,
        BackupMismatch,
        ConfigError,
        CtxError,
        EmptyQuery,
        EngineClosed,
        FileRejected,
        IngestFailed,
        IntegrityError,
        InternalError,
        InvalidBudget,
        InvalidInput,
        InvalidItemKind,
        KeyRecordDamaged,
        KeyUnavailable,
        LiveSnapshotTooLarge,
        ModelMismatch,
        NoSpace,
        NotAStore,
        NotFound,
        NotUtf8,
        RecoveryKeyInvalid,
        StoreDamaged,
        StoreExists,
        StoreLocked,
        StoreNotInitialized,
        StoreTooNew,
        VaultDamaged,
        VaultMissing,
        VectorsDamaged,
        VectorStoreUnavailable,
        WrongKey,
        error_from_dict,
        qualified_field,
    )
    from engine.facade import ContextEngine, init_store, repair_store
    from engine.flows.keeping.backup import verify_backup as verify_backup_file
    from engine.flows.keeping.key_changes import (
        change_passphrase,
        prepare_rotation,
        renew_recovery_key,
        rotate_key,
        use_keychain,
        use_passphrase,
    )
    from engine.flows.keeping.restore import restore_backup
    from engine.limits import (
        LIMITS,
        MAX_BUDGET,
        MAX_CONVERSATION_TURNS,
        MAX_LIVE_BYTES,
        MAX_LIVE_ITEMS,
        MAX_QUERY_CHARS,
        MIN_BUDGET,
    )
    from engine.pathnames import shown as shown_path
    from engine.paths import data_dir as resolve_data_dir
    from engine.paths import default_key_file
    from engine.protocol import ENGINE_METHODS, EngineAPI
    from engine.tokens import TokenCounter
    from engine.types import (
        LIVE_KINDS,
        SOURCE_KINDS,
        ConversationTurn,
        ConversationTurns,
        LiveItem,
        LiveItems,
    )

__all__ = [
    "ENGINE_METHODS",
    "FINAL_JOB_STATES",
    "JOB_STATES",
    "LIMITS",
    "LIVE_KINDS",
    "MAX_BUDGET",
    "MAX_CONVERSATION_TURNS",
    "MAX_LIVE_BYTES",
    "MAX_LIVE_ITEMS",
    "MAX_QUERY_CHARS",
    "MIN_BUDGET",
    "SOURCE_KINDS",
    "TIERS",
    "UPGRADE_LOGGER",
    "AdaptStatus",
    "Alert",
    "AlertCleared",
    "AlertRaised",
    "AuditEntry",
    "BackupConfig",
    "BackupDamaged",
    "BackupMismatch",
    "BackupResult",
    "BuildDone",
    "BuildItem",
    "Caller",
    "CompactResult",
    "Config",
    "ConfigError",
    "ContextEngine",
    "ConversationTurn",
    "ConversationTurns",
    "CtxError",
    "DeleteResult",
    "EmptyQuery",
    "EngineAPI",
    "EngineClosed",
    "ErrorInfo",
    "Event",
    "ExportResult",
    "FileIssue",
    "FileRejected",
    "Histogram",
    "IngestFailed",
    "IntegrityError",
    "InternalError",
    "InvalidBudget",
    "InvalidInput",
    "InvalidItemKind",
    "JobChanged",
    "JobProgress",
    "JobSnapshot",
    "KeyChangeResult",
    "KeyRecordDamaged",
    "KeyUnavailable",
    "LiveItem",
    "LiveItems",
    "LiveSnapshotTooLarge",
    "MetricsSnapshot",
    "ModelMismatch",
    "NoSpace",
    "NotAStore",
    "NotFound",
    "NotUtf8",
    "Payload",
    "PayloadItem",
    "RecallHit",
    "RecallResult",
    "RecoveryKeyInvalid",
    "RepairResult",
    "RestoreResult",
    "SearchHit",
    "ServerStats",
    "SourceInfo",
    "SourcesChanged",
    "Status",
    "StoreDamaged",
    "StoreExists",
    "StoreLocked",
    "StoreNotInitialized",
    "StoreTooNew",
    "SyncResult",
    "TokenCounter",
    "VaultDamaged",
    "VaultMissing",
    "VectorMemory",
    "VectorStoreUnavailable",
    "VectorsDamaged",
    "Warming",
    "WatchChanged",
    "WatchReport",
    "WrongKey",
    "backup_due",
    "backups_to_prune",
    "bounded",
    "caller",
    "change_passphrase",
    "check_bounds",
    "check_config",
    "default_key_file",
    "error_from_dict",
    "generate_recovery_key",
    "headless_key_available",
    "headless_key_file",
    "headless_passphrase",
    "init_store",
    "jsonable",
    "keychain_available",
    "load_config",
    "looks_like_recovery_key",
    "parse_config_section",
    "prepare_rotation",
    "probe_store",
    "qualified_field",
    "renew_recovery_key",
    "repair_store",
    "resolve_data_dir",
    "restore_backup",
    "rotate_key",
    "shown_path",
    "use_keychain",
    "use_passphrase",
    "verify_backup_file",
]


def __getattr__(name: str) -> Any:
    return resolve(_WHERE, __name__, name)
