"""The app's one catalogue of what it tells a person, in their words: what failed, why,
and what to do next; the settings' names; the reasons a file was left out.

Errors are told apart by their stable ``name`` (engine.errors), never by message
text, and neither the name, the code nor a config key (``tiers.recent_days``) is
ever shown: :func:`in_user_words` puts a setting's name from Settings in the place
of its key, and drops a program's exception class. Every sentence starts upper-case.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from desktop.notices import Notice
from engine import Alert, ErrorInfo, JobSnapshot, VaultDamaged, VectorsDamaged

WHAT_TO_DO = {
    "wrong_key": "Nothing was changed: try again.",
    "recovery_key_invalid": "Check the recovery key (letters and digits in groups; lower "
                            "case and 0 for O are fine) and try again.",
    "backup_damaged": "Choose another backup; this one cannot be restored.",
    "backup_of_another_store": "Choose a backup of this store.",
    "store_exists": "Nothing was changed.",
    "internal_error": "This is a fault in ctx, not in your data: please report it.",
    "key_unavailable": "Unlock the store with its passphrase (or check the OS keychain).",
    "store_locked": "Another ctx (the app or `ctx serve`) has this data folder open. "
                    "Quit it, then start ctx again.",
    "store_not_initialized": "Set up ctx first: choose how the store is protected.",
    "vector_store_unavailable": "Keyword search still works. Start the Chroma server, or "
                                "choose another vector backend in Settings.",
    "ingest_failed": "The Ingestion panel lists each file and the reason.",
    "file_rejected": "The Ingestion panel lists each file and the reason.",
    "config_invalid": "Correct it in Settings (or in config.toml) and save again.",
    "engine_closed": "Wait for ctx to be ready, or unlock the store.",
    "model_mismatch": "Use the embedding model this store was made with, or a new data folder.",
    "integrity_check_failed": "A shipped model or tokenizer file is damaged: reinstall ctx.",
    "not_found": "It may have been deleted already.",
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
    "no_space": "Free some space and try again; nothing was lost.",
    "empty_query": "Type a query first.",
    "invalid_budget": "Choose a budget between the allowed limits.",
}

# What happened, in the person's words, where the engine's own message is about its
# internals (a class, a backend) rather than about what they did.
SAY = {
    "wrong_key": "The passphrase or recovery key is wrong.",
    "vector_store_unavailable": "The vector store (a Chroma server) cannot be reached.",
    "engine_closed": "The store is not open yet.",
    "no_space": "The disk is full.",
    "key_unavailable": "The store is locked.",
}
# At open, nothing works until the store opens: what to do differs from the same error later.
WHAT_TO_DO_AT_OPEN = {
    "vector_store_unavailable": "Nothing can be searched until it can: start the Chroma "
                                "server, or use the default vector store (kept on this "
                                "computer, sealed with your key).",
}

# Config keys -> the names Settings shows them by (and that messages use in their place).
SETTING_NAMES: dict[str, str] = {
    "desktop.default_budget": "Budget in Retrieved items",
    "recall.auto_budget": "Budget for automatic recall",
    "packing.expansion_max_tokens": "Expanded top hit, max tokens",
    "packing.max_item_tokens": "Any other item, max tokens",
    "packing.live_max_share": "Live items' share of the budget",
    "packing.mode": "Packing mode",
    "tiers.mode": "Tier policy",
    "tiers.recent_days": "Full text up to (days old)",
    "tiers.old_days": "Micro summary from (days old)",
    "tiers.full": "Importance for full text",
    "tiers.gist": "Importance for a gist",
    "tiers.query_boost": "Boost when the query matches",
    "store.vector_backend": "Vector backend",
    "store.chroma_url": "Chroma server URL",
    "ingest.watched_folders": "Watched folders",
    "ingest.max_file_bytes": "Largest file read",
    "embedding.model": "Embedding model",
    "desktop.appearance": "Appearance",
    "desktop.start_at_login": "Start at login",
}
# A choice's stored value -> its name on screen.
CHOICE_NAMES: dict[str, str] = {
    "fast": "Fast: the stored text", "dense_cached": "Dense: summaries where they fit",
    "disabled": "Off: always the full text", "age_only": "By age",
    "importance": "By importance and age",
    "memory": "On this computer (default)", "embedded": "Chroma in the data folder",
    "http": "A Chroma server",
}
# A payload's item kinds (colour groups, desktop.widgets.KIND_COLOURS) and the
# payload's own framing -> one name each, the same in the chart, its legend and the table.
KIND_NAMES: dict[str, str] = {
    "section": "Document sections", "code": "Code", "turn": "Conversation turns",
    "turn_pair": "Question and answer", "thinking": "Reasoning", "tool": "Tool output",
    "surrogate": "Summaries", "live": "Live context", "conversation": "Conversations",
    "other": "Other", "framing": "Headers and separators",
}


def kind_name(kind: str) -> str:
    return KIND_NAMES.get(kind) or sentence_case(kind.replace("_", " "))


def item_kind(kind: str) -> str:
    """One item's or source's kind in a table cell: "Code", "Section", "Live selection"
    (the engine's "live:selection"), never its code."""
    if kind.startswith("live:"):
        sub = kind.split(":", 1)[1]
        return "Live " + LIVE_KIND_NAMES.get(sub, sub.replace("_", " ")).lower()
    return sentence_case(kind.replace("_", " "))


# A source's stage (engine.SOURCE_STAGES) -> its name on screen.
STAGE_NAMES = {"keyword": "Keyword search only (vectors being made)", "ready": "Ready"}
STAGE_SHORT = {"keyword": "Keywords only", "ready": "Ready"}


def stage_name(stage: str, *, short: bool = True) -> str:
    """How far a source is searchable: "Keywords only" until its vectors are in, "Ready"."""
    names = STAGE_SHORT if short else STAGE_NAMES
    return names.get(stage) or (sentence_case(stage) if stage else "—")


# Live context kinds (what a caller sees now) -> their names on screen.
LIVE_KIND_NAMES: dict[str, str] = {
    "selection": "Selection", "clipboard": "Clipboard", "active_file": "Active file",
    "browser_tab": "Browser tab", "terminal": "Terminal", "window": "Window",
    "other": "Other",
}
# Why a file is not in the store (the engine's stable reasons). Skips are on purpose.
REASONS = {
    "unreadable": "Could not be read (permissions or a disk error)",
    "broken_link": "A broken link: the file it points to is gone",
    "binary": "Binary content, not text",
    "empty": "Empty: no text to index",
    "too_large": "Larger than the largest file ctx reads",
    "malformed": "Malformed: the file could not be parsed",
    "unsupported": "A format ctx does not read",
    "blob": "Generated data (minified, encoded or a data dump), not prose or code",
}


def setting_name(key: str) -> str:
    """The name Settings shows for a dotted config key ("tiers.recent_days")."""
    if key in SETTING_NAMES:
        return SETTING_NAMES[key]
    leaf = key.rsplit(".", 1)[-1].replace("_", " ")
    return leaf[:1].upper() + leaf[1:]


_CLASS = re.compile(r"(?::\s*)?\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
_CODE = re.compile(r"\s*\((?:[a-z]+_)+[a-z]+\)")


def in_user_words(text: str, key: str | None = None) -> str:
    """``text`` with config keys as Settings names them (dotted, or a bare leaf in the
    named section), no exception class names and no ``(error_code)``; upper-case first."""
    for dotted in sorted(SETTING_NAMES, key=len, reverse=True):
        text = text.replace(dotted, f"\u201c{SETTING_NAMES[dotted]}\u201d")
    section = key.split(".", 1)[0] if key else None
    if section:
        text = re.sub(rf"^{re.escape(section)}:\s*", "", text)
        for dotted, name in SETTING_NAMES.items():
            if dotted.startswith(section + "."):
                leaf = dotted.split(".", 1)[1]
                text = re.sub(rf"\b{re.escape(leaf)}\b", f"\u201c{name}\u201d", text)
    text = _CODE.sub("", _CLASS.sub("", text)).strip()
    return sentence_case(text)


def sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _full_stop(text: str) -> str:
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def error_text(error: Any, *, advice: bool = True) -> str:
    """What went wrong, for a person: the catalogue's sentence or the engine's message in
    user words, then (``advice``) what to do; never its code or stable name."""
    if error is None:
        return "It failed."
    if isinstance(error, str):
        return sentence_case(error)
    if isinstance(error, dict):
        name, message, details = error.get("name", ""), error.get("message", ""), \
            error.get("details") or {}
    else:
        name = getattr(error, "name", "")
        message = getattr(error, "message", None) or str(error)
        details = getattr(error, "details", None) or {}
    name = name if isinstance(name, str) else ""
    key = details.get("key") if isinstance(details, dict) else None
    what = SAY.get(name) or in_user_words(message or "It failed", key if isinstance(
        key, str) else None)
    return f"{_full_stop(what)} {WHAT_TO_DO.get(name, '') if advice else ''}".strip()


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


# Audit log operations (the engine's method names) -> words.
AUDIT_NAMES = {
    "build_context": "Build context", "search": "Search", "ingest_job": "Ingest",
    "backup_job": "Back up", "verify_backup_job": "Check a backup", "sync": "Sync sessions",
    "recall": "Recall", "delete": "Delete", "export": "Export", "restore": "Restore",
}


def audit_name(method: str) -> str:
    """An audit record's operation in words ("build_context" -> "Build context")."""
    if method in AUDIT_NAMES:
        return AUDIT_NAMES[method]
    words = method.removesuffix("_job").replace("_", " ").strip()
    return sentence_case(words) or "—"


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 file", "2 files", "1,204 chunks": a count with its word, singular for one."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def describe(operation: str, error: ErrorInfo) -> str:
    """One or two sentences: what failed, why, and what to do (no code, no key)."""
    what = OPERATIONS.get(operation, operation.replace("_", " ").capitalize())
    key = error.details.get("key") if isinstance(error.details, dict) else None
    why = SAY.get(error.name) or in_user_words(error.message or "it failed",
                                               key if isinstance(key, str) else None)
    why = why[:1].lower() + why[1:] if why[:2] != why[:2].upper() else why
    todo = (WHAT_TO_DO_AT_OPEN.get(error.name) if operation in ("open", "create_store")
            else None) or WHAT_TO_DO.get(error.name, "")
    return f"{_full_stop(f'{what} failed: {why}')} {todo}".strip()


def error_color(widget: object) -> str:
    """The error red that reads on the widget's palette (light or dark background)."""
    from desktop.appearance import is_dark_palette, tone_colour

    return tone_colour("error", is_dark_palette(widget.palette()))  # type: ignore[attr-defined]


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
                      f"Ingesting {title} failed: "
                      + (error_text(err, advice=False) if err else "an unknown error."),
                      err.code if err else 1050, job=snap.id)
    if snap.errors:
        n = len(snap.errors)
        return Notice("ingest_failed", f"{title}: {plural(n, 'file')} could not be ingested",
                      1050, job=snap.id)
    return None


def alert_notice(alert: Alert) -> Notice:
    """The notice for an engine alert (``context_engine.vector_db.unavailable``...)."""
    code, err_name, words = ALERTS.get(alert.name, (1000, alert.name, ""))
    text = sentence_case(words) if words else "Something needs your attention"
    if alert.detail:
        text += f": {in_user_words(alert.detail)}"
    return Notice(err_name, text, code, alert=alert.name)
