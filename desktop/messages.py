"""What to tell a person about an error: the engine's message plus what to do next.

Errors are told apart by their stable ``name`` (engine.errors), never by
message text.
"""

from __future__ import annotations

from pathlib import PurePath

from desktop.notices import Notice
from engine import Alert, ErrorInfo, JobSnapshot, VaultDamaged, VectorsDamaged

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

# Engine alert names (metrics) -> (code, the error a user is shown, a few words for the tray).
ALERTS: dict[str, tuple[int, str, str]] = {
    "context_engine.vector_db.unavailable": (1040, "vector_store_unavailable",
                                             "the vector store is unavailable"),
    "context_engine.ingestion.failed": (1050, "ingest_failed", "ingestion failed"),
    "context_engine.vault.damaged": (VaultDamaged.code, "vault_damaged",
                                     "part of the vault is damaged"),
    "context_engine.vector_db.incomplete": (VectorsDamaged.code, "vectors_damaged",
                                            "vectors are missing: run ctx repair"),
}
# Told by each job's own notice (with its files), so the engine's alert adds nothing.
JOB_ALERTS = frozenset({"context_engine.ingestion.failed"})

OPERATIONS = {
    "open": "Opening the store", "create_store": "Creating the store",
    "ingest": "Ingestion", "build_context": "Building context", "delete_source": "Deleting",
    "sync_sessions": "Syncing coding sessions", "pause_ingestion": "Pausing ingestion",
    "resume_ingestion": "Resuming ingestion", "cancel_job": "Cancelling a job",
    "serve": "Starting the IPC server", "reload_config": "Reloading settings",
    "resume_interrupted": "Resuming an interrupted job",
    "dismiss_interrupted": "Dismissing an interrupted job",
}


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 file", "2 files", "1,204 chunks": a count with its word, singular for one."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def describe(operation: str, error: ErrorInfo) -> str:
    """One or two sentences: what failed, why, and what to do."""
    what = OPERATIONS.get(operation, operation.replace("_", " ").capitalize())
    text = f"{what} failed: {error.message or error.name}"
    if not text.endswith((".", "!", "?")):
        text += "."
    return f"{text} {WHAT_TO_DO.get(error.name, '')}".strip()


def error_color(widget: object) -> str:
    """A red that reads on the widget's palette (light or dark background)."""
    window = widget.palette().window().color()  # type: ignore[attr-defined]
    return "#F28B82" if window.lightness() < 128 else "#B3261E"


def error_style(widget: object) -> str:
    return f"color: {error_color(widget)}; font-weight: bold;"


def job_title(snap: JobSnapshot) -> str:
    """What a job ingests, in a few words: "notes", "report.pdf", "3 files", "Coding sessions"."""
    if snap.kind == "sync":
        return "Coding sessions"
    if snap.kind == "vectors":  # the engine's own: vectors for what is stored already
        return "Vectors for stored sources"
    if snap.kind in ("text", "conversation"):
        return "A conversation" if snap.kind == "conversation" else "A text"
    inputs = snap.inputs
    if not inputs:
        return "Files"
    if len(inputs) == 1:
        return PurePath(inputs[0]).name or inputs[0]
    first = PurePath(inputs[0]).name
    return f"{first} and {plural(len(inputs) - 1, 'other')}"


def job_notice(snap: JobSnapshot) -> Notice | None:
    """The notice for a finished job that failed or skipped files (None when all went in)."""
    title = job_title(snap)
    if snap.state == "failed":
        err = snap.error
        return Notice(err.name if err else "ingest_failed",
                      f"Ingesting {title} failed: {err.message if err else 'unknown error'}",
                      err.code if err else 1050, job=snap.id)
    if snap.errors:
        n = len(snap.errors)
        return Notice("ingest_failed", f"{title}: {plural(n, 'file')} could not be ingested",
                      1050, job=snap.id)
    return None


def alert_notice(alert: Alert) -> Notice:
    """The notice for an engine alert (``context_engine.vector_db.unavailable``...)."""
    code, err_name, words = ALERTS.get(alert.name, (1000, alert.name, ""))
    text = words[:1].upper() + words[1:] if words else alert.name.replace("context_engine.", "")
    if alert.detail:
        text += f" ({alert.detail})"
    return Notice(err_name, text, code, alert=alert.name)
