"""One exception hierarchy for ctx.

Every error has a stable numeric ``code`` and ``name`` so that a caller on the
other side of a wire (or a script reading the CLI's JSON) can tell errors apart
without reading messages. Messages never contain user text: they name ids,
counts, paths the caller supplied, or config keys.
"""

from __future__ import annotations

from typing import Any, ClassVar


class CtxError(Exception):
    """Base class of every error ctx raises on purpose."""

    code: ClassVar[int] = 1000
    name: ClassVar[str] = "ctx_error"

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message or self.name)
        self.message = message or self.name
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "message": self.message,
                "details": self.details}


class ConfigError(CtxError):
    code, name = 1001, "config_invalid"


class InvalidInput(CtxError):
    code, name = 1002, "invalid_input"


class EmptyQuery(InvalidInput):
    code, name = 1003, "empty_query"


class InvalidBudget(InvalidInput):
    code, name = 1004, "invalid_budget"


class LiveSnapshotTooLarge(InvalidInput):
    code, name = 1005, "live_snapshot_too_large"


class InvalidItemKind(InvalidInput):
    code, name = 1006, "invalid_item_kind"


class NotUtf8(InvalidInput):
    code, name = 1007, "not_utf8"


class NotFound(CtxError):
    code, name = 1010, "not_found"


class StoreLocked(CtxError):
    code, name = 1020, "store_locked"


class WrongKey(CtxError):
    code, name = 1021, "wrong_key"


class KeyUnavailable(CtxError):
    code, name = 1022, "key_unavailable"


class StoreNotInitialized(CtxError):
    code, name = 1023, "store_not_initialized"


class StoreDamaged(CtxError):
    """The data dir holds a store that cannot be opened as it is. The message names
    the part that is wrong and what to do; nothing on disk was changed."""

    code, name = 1024, "store_damaged"


class NotAStore(StoreDamaged):
    """The data dir exists but is not a ctx store (no key record, foreign files)."""

    code, name = 1025, "not_a_store"


class KeyRecordDamaged(StoreDamaged):
    code, name = 1026, "key_record_damaged"


class VaultMissing(StoreDamaged):
    code, name = 1027, "vault_missing"


class VaultDamaged(StoreDamaged):
    code, name = 1028, "vault_damaged"


class StoreTooNew(StoreDamaged):
    code, name = 1029, "store_too_new"


class VectorsDamaged(StoreDamaged):
    """``vectors/`` cannot be read or belongs to another store; ``ctx repair`` rebuilds it."""

    code, name = 1032, "vectors_damaged"


class NoSpace(CtxError):
    """The disk holding the data dir is full: nothing was written; reads still work."""

    code, name = 1033, "no_space"


class IntegrityError(CtxError):
    """A shipped file (tokenizer, model weights) does not match its published hash."""

    code, name = 1030, "integrity_check_failed"


class ModelMismatch(CtxError):
    code, name = 1031, "model_mismatch"


class VectorStoreUnavailable(CtxError):
    code, name = 1040, "vector_store_unavailable"


class IngestFailed(CtxError):
    code, name = 1050, "ingest_failed"


class FileRejected(CtxError):
    """One input file was skipped; ``reason`` is one of the stable REJECT_* values."""

    code, name = 1051, "file_rejected"

    def __init__(self, path: str, reason: str, message: str = "", detail: str = "") -> None:
        what = f"{reason} ({detail})" if detail else reason
        super().__init__(message or f"{what}: {path}", path=path, reason=reason,
                         **({"detail": detail} if detail else {}))
        self.path = path
        self.reason = reason
        self.detail = detail  # which kind of a reason (a blob's: "base64", "minified"...)


REJECT_UNREADABLE = "unreadable"
REJECT_BINARY = "binary"
REJECT_EMPTY = "empty"
REJECT_TOO_LARGE = "too_large"
REJECT_MALFORMED = "malformed"
REJECT_UNSUPPORTED = "unsupported"
REJECT_SPECIAL = "special_file"  # a FIFO, socket or device: never opened
REJECT_UNPACKED_TOO_LARGE = "unpacked_too_large"  # a zip bomb, or a container too big
REJECT_BLOB = "blob"  # text that holds data, not words (engine.ingest.blobs): detail says which
# Reasons that mean something went wrong (the alert context_engine.ingestion.failed);
# every other reason is a file left out on purpose, reported as a skip.
FAILURE_REASONS: tuple[str, ...] = (REJECT_UNREADABLE, REJECT_MALFORMED)


class RecoveryKeyInvalid(WrongKey):
    """What was given as a recovery key is not one (its shape, or a typo its checksum caught)."""

    code, name = 1070, "recovery_key_invalid"


class BackupDamaged(StoreDamaged):
    """A backup file that is not one, truncated, or changed since it was written."""

    code, name = 1071, "backup_damaged"


class BackupMismatch(StoreDamaged):
    """A backup of another store than the one it was checked or restored against."""

    code, name = 1072, "backup_of_another_store"


class StoreExists(CtxError):
    """A restore would overwrite a store: it refuses unless told (``--replace``)."""

    code, name = 1073, "store_exists"


class EngineClosed(CtxError):
    code, name = 1060, "engine_closed"


class InternalError(CtxError):
    """The engine failed on something that is not a CtxError (a bug), in a call or in a
    job: only the exception's type travels (``details.type``), never its message."""

    code, name = 2008, "internal_error"

    @classmethod
    def of(cls, exc: BaseException, doing: str) -> InternalError:
        kind = type(exc).__name__
        return cls(f"{doing} failed with {kind}", type=kind)


def qualified_field(field: Any, method: str) -> str:
    """``field`` as a path under ``method`` (``query`` -> ``search.query``); the method
    itself when ``field`` is empty or not a string."""
    if not isinstance(field, str) or not field:
        return method
    if field == method or field.startswith((f"{method}.", f"{method}[")):
        return field
    return f"{method}.{field}"


def name_field(error: CtxError, method: str) -> None:
    """Give an error about the caller's input its place as ``<method>.<field>``:
    ``details.field`` of every ``invalid_input`` family error (the method itself when
    it names none), and of any other error that names one (``not_found``). The same
    path in process and over the wire (ipc.replies does the same to every reply)."""
    field = error.details.get("field")
    if isinstance(error, InvalidInput) or field is not None:
        error.details["field"] = qualified_field(field, method)


def all_error_classes() -> list[type[CtxError]]:
    """Every CtxError subclass, for mapping codes back to classes across a wire."""
    out: list[type[CtxError]] = []
    stack: list[type[CtxError]] = [CtxError]
    while stack:
        cls = stack.pop()
        out.append(cls)
        stack.extend(cls.__subclasses__())
    return out


def error_from_dict(data: dict[str, Any]) -> CtxError:
    """Rebuild an error sent over a wire; unknown codes become a plain CtxError."""
    by_code = {cls.code: cls for cls in all_error_classes()}
    cls = by_code.get(int(data.get("code", 1000)), CtxError)
    err = CtxError.__new__(cls)
    CtxError.__init__(err, str(data.get("message", "")), **dict(data.get("details") or {}))
    if isinstance(err, FileRejected):
        err.path = str(err.details.get("path", ""))
        err.reason = str(err.details.get("reason", ""))
    return err
