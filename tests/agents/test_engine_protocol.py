"""ContextEngine and RemoteEngine implement the one engine protocol, parameter by parameter."""

from __future__ import annotations

import inspect

import pytest

from engine.facade import ContextEngine
from ipc.engine_protocol import ENGINE_METHODS, EngineAPI
from ipc.protocol import METHODS
from ipc.remote import RemoteEngine


def _shape(fn: object) -> list[tuple[str, object, object]]:
    """Names, kinds and defaults of a method's parameters (annotations may differ in form)."""
    params = list(inspect.signature(fn).parameters.values())[1:]  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in params]


@pytest.mark.parametrize("impl", [ContextEngine, RemoteEngine])
@pytest.mark.parametrize("method", ENGINE_METHODS)
def test_signature_matches_the_protocol(impl: type, method: str) -> None:
    assert hasattr(impl, method), f"{impl.__name__} lacks {method}"
    assert _shape(getattr(impl, method)) == _shape(getattr(EngineAPI, method)), \
        f"{impl.__name__}.{method} drifted from EngineAPI.{method}"


def test_the_protocol_covers_every_wire_method_the_engine_serves() -> None:
    served = set(METHODS) - {"ping", "shutdown", "status", "metrics", "job", "jobs", "audit"}
    assert served <= set(ENGINE_METHODS)


def test_wire_recall_takes_every_engine_recall_parameter() -> None:
    engine_params = set(inspect.signature(ContextEngine.recall).parameters) - {"self"}
    assert engine_params == set(METHODS["recall"].params)


def test_ingest_wire_params_match() -> None:
    engine_params = set(inspect.signature(ContextEngine.ingest).parameters) - {"self"}
    assert engine_params == set(METHODS["ingest"].params)
