"""Pin what the ipc package exports, so changes to it are deliberate."""

from __future__ import annotations

import importlib

import pytest

from engine.errors import CtxError, all_error_classes, error_from_dict

EXPECTED = {
    "ipc.errors": ["BadSignature", "InternalError", "IpcError", "IpcTimeout", "KeyMismatch",
                   "MessageTooLarge", "ProtocolError", "Replayed", "ServerUnavailable",
                   "UnknownMethod"],
    "ipc.wire": ["DEFAULT_MAX_MESSAGE_BYTES", "DELIMITER", "FINAL_JOB_STATES", "Field",
                     "IpcConfig", "JOB_STATES", "METHODS", "MethodSpec", "PROTOCOL_VERSION",
                     "check", "check_header", "method_spec", "validate_params",
                     "validate_result", "version_compatible"],
    "ipc.session": ["Message", "Rejected", "Session", "dumps", "loads"],
    "ipc.connection": ["ConnectionInfo", "candidate_paths", "connection_file_path",
                       "default_endpoint", "make_info", "pid_alive", "process_started",
                       "read_connection_file",
                       "remove_connection_file", "runtime_dir", "write_connection_file"],
    "ipc.discovery": ["PROBE_TIMEOUT_S", "find_live"],
    "ipc.server": ["Server"],
    "ipc.client": ["Client"],
    "ipc.remote": ["RemoteEngine", "connect"],
    "ipc.serve": ["ServerHost", "main", "serve"],
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_exports(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(EXPECTED[module])
    for name in mod.__all__:
        assert hasattr(mod, name), name


def test_error_codes_are_stable_and_unique() -> None:
    errors = importlib.import_module("ipc.errors")
    table = {cls.name: cls.code for cls in (getattr(errors, n) for n in errors.__all__)}
    assert table == {
        "ipc_error": 2000, "protocol_error": 2001, "bad_signature": 2002, "replayed": 2003,
        "message_too_large": 2004, "unknown_method": 2005, "ipc_timeout": 2006,
        "server_unavailable": 2007, "internal_error": 2008, "key_mismatch": 2009,
    }
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("name", ["BadSignature", "IpcTimeout", "ServerUnavailable"])
def test_errors_rebuild_from_the_wire(name: str) -> None:
    cls = getattr(importlib.import_module("ipc.errors"), name)
    original = cls("boom", method="status")
    rebuilt = error_from_dict(original.to_dict())
    assert type(rebuilt) is cls and isinstance(rebuilt, CtxError)
    assert rebuilt.details == {"method": "status"}
