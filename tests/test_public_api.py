"""Pins what the packages export, and the house rule that engine/ imports no Qt or ZeroMQ."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import engine

REPO = Path(__file__).resolve().parents[1]


def test_engine_exports() -> None:
    assert sorted(engine.__all__) == sorted([
        # the engine, its protocol, who calls it
        "ContextEngine", "EngineAPI", "ENGINE_METHODS", "init_store", "repair_store",
        "probe_store", "caller", "Caller", "jsonable",
        # results and events (engine.api)
        "Alert", "AlertCleared", "AlertRaised", "AuditEntry", "BuildDone", "BuildItem",
        "CompactResult", "DeleteResult", "ErrorInfo", "Event", "FileIssue", "Histogram", "JobChanged", "JobProgress",
        "JobSnapshot", "MetricsSnapshot", "Payload", "PayloadItem", "RecallHit", "RecallResult",
        "RepairResult",
        "SearchHit", "ServerStats", "SourceInfo", "SourcesChanged", "Status", "SyncResult",
        "VectorMemory",
        "AdaptStatus", "Warming", "WatchChanged", "WatchReport", "FINAL_JOB_STATES", "JOB_STATES", "TIERS",
        "UPGRADE_LOGGER",
        # errors
        "CtxError", "ConfigError", "InvalidInput", "EmptyQuery", "InvalidBudget",
        "LiveSnapshotTooLarge", "InvalidItemKind", "NotUtf8", "NotFound", "StoreLocked",
        "WrongKey", "KeyUnavailable", "StoreNotInitialized", "StoreDamaged", "NotAStore",
        "KeyRecordDamaged", "VaultMissing", "VaultDamaged", "StoreTooNew", "VectorsDamaged",
        "NoSpace", "IntegrityError", "ModelMismatch", "VectorStoreUnavailable", "IngestFailed",
        "FileRejected", "EngineClosed", "InternalError", "error_from_dict", "qualified_field",
        # config, paths, kinds, tokens, keys
        "Config", "load_config", "check_config", "parse_config_section", "bounded",
        "check_bounds", "resolve_data_dir",
        "shown_path",
        "LiveItem", "ConversationTurn", "LiveItems", "ConversationTurns",
        "LIVE_KINDS", "SOURCE_KINDS", "TokenCounter",
        "LIMITS", "MIN_BUDGET", "MAX_BUDGET", "MAX_QUERY_CHARS", "MAX_LIVE_ITEMS",
        "MAX_LIVE_BYTES", "MAX_CONVERSATION_TURNS", "keychain_available",
        "headless_passphrase", "headless_key_available", "headless_key_file", "default_key_file",
        # keeping the data: backups, restore, export, recovery keys, key changes
        "BackupConfig", "BackupResult", "RestoreResult", "ExportResult", "KeyChangeResult",
        "RecoveryKeyInvalid", "BackupDamaged", "BackupMismatch", "StoreExists",
        "restore_backup", "verify_backup_file", "rotate_key", "prepare_rotation",
        "change_passphrase",
        "use_keychain", "use_passphrase", "renew_recovery_key", "generate_recovery_key",
        "looks_like_recovery_key", "backups_to_prune", "backup_due"])
    for name in engine.__all__:
        assert getattr(engine, name) is not None


def test_facade_methods() -> None:
    cls = engine.ContextEngine
    public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    assert {"open", "close", "ingest", "ingest_conversation", "job", "jobs", "wait", "subscribe",
            "build_context", "search", "recall", "sync", "sources", "delete", "status",
            "metrics", "audit", "audit_event", "pause_ingestion", "resume_ingestion"} <= public
    params = inspect.signature(engine.ContextEngine.build_context).parameters
    assert list(params)[:6] == ["self", "query", "live", "conversation", "budget", "config"]
    assert params["budget"].default == 1500


def test_engine_imports_no_qt_or_zmq() -> None:
    banned = {"PySide6", "zmq", "ipc", "desktop"}
    for path in (REPO / "engine").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in banned, f"{path}: imports {name}"


def test_the_typed_face_lists_exactly_all() -> None:
    """engine/__init__.py loads its names lazily (``__getattr__``); its ``if TYPE_CHECKING:``
    block is what a type checker and an IDE see. It imports exactly ``__all__``, each from
    where ``__getattr__`` loads it, so ``from engine import Payload`` is typed, not Any."""
    tree = ast.parse((REPO / "engine" / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module, ast.dump(node)
        for alias in node.names:
            public = alias.asname or alias.name
            assert public not in seen, f"{public} imported twice"
            seen[public] = node.module + ("" if alias.asname is None else f":{alias.name}")
    assert sorted(seen) == sorted(engine.__all__)
    for public, where in seen.items():
        assert engine._WHERE[public] == where, (public, where)


def test_the_limits_keep_their_former_names() -> None:
    """``LIMITS`` holds the caller limits; the six names the face exported before it
    stay, equal to its fields (callers of ``from engine import MAX_BUDGET`` keep working)."""
    import engine

    assert (engine.MIN_BUDGET, engine.MAX_BUDGET, engine.MAX_QUERY_CHARS,
            engine.MAX_LIVE_ITEMS, engine.MAX_LIVE_BYTES, engine.MAX_CONVERSATION_TURNS) == (
        engine.LIMITS.min_budget, engine.LIMITS.max_budget, engine.LIMITS.max_query_chars,
        engine.LIMITS.max_live_items, engine.LIMITS.max_live_bytes,
        engine.LIMITS.max_conversation_turns)
