"""The exit status of a ctx process that ends on an error is the command line's concern
(ipc/exit_codes.py): the engine's errors carry only their code and name, and every error
class, the engine's and the wire's, subclasses and errors rebuilt off the wire included,
has the status docs/cli.md gives its kind."""

from __future__ import annotations

import pytest

import engine.errors as engine_errors
import ipc.errors as ipc_errors
from engine.errors import CtxError, error_from_dict
from ipc.exit_codes import exit_code

# docs/cli.md: 0 ok, 2 usage, 3 not found, 4 locked, wrong key or damaged store, 5 server
# timeout, 1 other.
EXPECTED = {
    "ConfigError": 2, "InvalidInput": 2, "EmptyQuery": 2, "InvalidBudget": 2,
    "LiveSnapshotTooLarge": 2, "InvalidItemKind": 2, "NotUtf8": 2,
    "NotFound": 3,
    "StoreLocked": 4, "WrongKey": 4, "RecoveryKeyInvalid": 4, "KeyUnavailable": 4,
    "StoreNotInitialized": 4, "StoreDamaged": 4, "NotAStore": 4, "KeyRecordDamaged": 4,
    "VaultMissing": 4, "VaultDamaged": 4, "StoreTooNew": 4, "VectorsDamaged": 4,
    "BackupDamaged": 4, "BackupMismatch": 4, "StoreExists": 4,
    "NoSpace": 1, "IntegrityError": 1, "ModelMismatch": 1, "VectorStoreUnavailable": 1,
    "IngestFailed": 1, "FileRejected": 1, "EngineClosed": 1, "InternalError": 1,
    "CtxError": 1,
    "IpcError": 1, "ProtocolError": 1, "BadSignature": 1, "Replayed": 1, "MessageTooLarge": 1,
    "UnknownMethod": 1,
    "IpcTimeout": 5, "ServerUnavailable": 5, "KeyMismatch": 5,
}


def _error_classes() -> dict[str, type[CtxError]]:
    out = {}
    for module in (engine_errors, ipc_errors):
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, CtxError):
                out[name] = value
    return out


@pytest.mark.parametrize(("name", "status"), sorted(EXPECTED.items()))
def test_each_error_exits_with_its_kinds_status(name: str, status: int) -> None:
    cls = _error_classes()[name]
    err = cls.__new__(cls)
    CtxError.__init__(err, "m")
    assert exit_code(err) == status
    if cls.__module__ == "engine.errors":  # rebuilt off the wire, as the CLI receives it
        assert exit_code(error_from_dict(err.to_dict())) == status


def test_every_error_class_is_listed() -> None:
    assert sorted(_error_classes()) == sorted(EXPECTED)


def test_the_engines_errors_carry_no_exit_status() -> None:
    for name, cls in _error_classes().items():
        assert "exit_code" not in vars(cls), f"{name} names an exit status: ipc/exit_codes.py"
