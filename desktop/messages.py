"""What to tell a person about an error: the engine's message plus what to do next.

Errors are told apart by their stable ``name`` (engine.errors), never by
message text.
"""

from __future__ import annotations

from typing import Any

from engine import Alert, JobSnapshot

WHAT_TO_DO = {
    "wrong_key": "The passphrase is wrong. Nothing was changed: try again.",
    "key_unavailable": "Unlock the store with its passphrase (or check the OS keychain).",
    "store_locked": "Another ctx (the app or `ctx serve`) has this data folder open. "
                    "Quit it, then start ctx again.",
    "store_not_initialized": "Set up ctx first: choose how the store is protected.",
    "vector_store_unavailable": "The vector store cannot be reached; keyword search still "
                                "works. Check the vector backend and Chroma URL in Settings.",
    "ingest_failed": "The Ingestion panel lists each file and the reason.",
    "file_rejected": "The Ingestion panel lists each file and the reason.",
    "config_invalid": "Correct the setting in Settings (or config.toml) and save again.",
    "engine_closed": "The store is not open yet: wait for ctx to be ready, or unlock it.",
    "model_mismatch": "Use the embedding model this store was made with, or a new data folder.",
    "integrity_check_failed": "A shipped model or tokenizer file is damaged: reinstall ctx.",
    "not_found": "It may have been deleted already: refresh the list.",
    "not_a_store": "This folder holds other files, not a ctx store: choose another data "
                   "folder (ctx --data-dir, or CTX_HOME).",
    "store_damaged": "Part of the store is damaged; nothing was changed. Restore the data "
                     "folder from a backup, or start ctx on a new data folder.",
    "key_record_damaged": "The store's key record is damaged: restore it from a backup.",
    "vault_missing": "The encrypted vault file is missing: restore the data folder from a "
                     "backup.",
    "vault_damaged": "The encrypted vault is damaged: restore the data folder from a backup.",
    "store_too_new": "This store was made by a newer ctx: update ctx to open it.",
    "vectors_damaged": "The vector index is damaged; ctx can rebuild it from the vault.",
    "no_space": "The disk is full: free some space and try again; nothing was lost.",
    "empty_query": "Type a query first.",
    "invalid_budget": "Choose a budget between the allowed limits.",
}

# Engine alert names (metrics) -> the error a user is shown.
ALERT_CODES = {"context_engine.vector_db.unavailable": (1040, "vector_store_unavailable"),
               "context_engine.ingestion.failed": (1050, "ingest_failed")}

OPERATIONS = {
    "open": "Opening the store", "create_store": "Creating the store",
    "ingest": "Ingestion", "build_context": "Building context", "delete_source": "Deleting",
    "sync_sessions": "Syncing coding sessions", "pause_ingestion": "Pausing ingestion",
    "resume_ingestion": "Resuming ingestion", "cancel_job": "Cancelling a job",
    "serve": "Starting the IPC server", "reload_config": "Reloading settings",
}


def describe(operation: str, error: dict[str, Any]) -> str:
    """One or two sentences: what failed, why, and what to do."""
    what = OPERATIONS.get(operation, operation.replace("_", " ").capitalize())
    message = str(error.get("message") or error.get("name") or "unknown error")
    hint = WHAT_TO_DO.get(str(error.get("name", "")), "")
    text = f"{what} failed: {message}"
    if not text.endswith((".", "!", "?")):
        text += "."
    return f"{text} {hint}".strip()


def error_color(widget: object) -> str:
    """A red that reads on the widget's palette (light or dark background)."""
    window = widget.palette().window().color()  # type: ignore[attr-defined]
    return "#F28B82" if window.lightness() < 128 else "#B3261E"


def error_style(widget: object) -> str:
    return f"color: {error_color(widget)}; font-weight: bold;"


def job_alert(snap: JobSnapshot) -> dict[str, Any] | None:
    """The alert for a finished job that failed or skipped files (None when all went in)."""
    if snap.state == "failed":
        err = snap.error
        return {"code": err.code if err else 1050, "name": err.name if err else "ingest_failed",
                "message": f"Job {snap.id} failed: {err.message if err else 'unknown error'}",
                "job": snap.id}
    if snap.errors:
        n = len(snap.errors)
        return {"code": 1050, "name": "ingest_failed", "job": snap.id,
                "message": f"{n} file{'s' if n != 1 else ''} could not be ingested "
                           f"(job {snap.id})"}
    return None


def metric_alert(alert: Alert) -> dict[str, Any]:
    """The alert for an engine metrics alert (``context_engine.vector_db.unavailable``...)."""
    code, err_name = ALERT_CODES.get(alert.name, (1000, alert.name))
    return {"code": code, "name": err_name,
            "message": alert.detail or alert.name.replace("context_engine.", "")}
