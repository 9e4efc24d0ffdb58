"""ContextEngine and RemoteEngine implement the one engine protocol: parameters and results."""

from __future__ import annotations

import inspect
import typing

import pytest

from engine import ENGINE_METHODS, ContextEngine, EngineAPI
from ipc.remote import RemoteEngine
from ipc.wire import METHODS


def _shape(fn: object) -> tuple[list[tuple[str, object, object]], object]:
    """Names, kinds and defaults of a method's parameters, and its return type (resolved,
    so that ``list[SearchHit]`` written in two modules compares equal)."""
    params = list(inspect.signature(fn).parameters.values())[1:]  # type: ignore[arg-type]
    returns = typing.get_type_hints(fn).get("return")
    return [(p.name, p.kind, p.default) for p in params], returns


@pytest.mark.parametrize("impl", [ContextEngine, RemoteEngine])
@pytest.mark.parametrize("method", ENGINE_METHODS)
def test_signature_matches_the_protocol(impl: type, method: str) -> None:
    assert hasattr(impl, method), f"{impl.__name__} lacks {method}"
    assert _shape(getattr(impl, method)) == _shape(getattr(EngineAPI, method)), \
        f"{impl.__name__}.{method} drifted from EngineAPI.{method}"


def test_a_drifted_return_type_or_default_is_caught() -> None:
    """The comparison sees a result type and a default that differ, not only names."""
    class Drifted:
        def search(self, query: str, k: int = 10, *, kinds: typing.Any = None,
                   path_prefix: str | None = None, since: float | None = None,
                   until: float | None = None, distinct_sources: bool = False
                   ) -> list[dict[str, typing.Any]]:
            return []

        def status(self, *, fresh: bool = True) -> dict[str, typing.Any]:
            return {}

    assert _shape(Drifted.search)[0] == _shape(EngineAPI.search)[0]
    assert _shape(Drifted.search) != _shape(EngineAPI.search)
    assert _shape(Drifted.status) != _shape(EngineAPI.status)


def test_the_protocol_covers_every_wire_method_the_engine_serves() -> None:
    served = set(METHODS) - {"ping", "shutdown", "status", "metrics", "job", "jobs", "audit"}
    assert served <= set(ENGINE_METHODS)


def test_wire_recall_takes_every_engine_recall_parameter() -> None:
    engine_params = set(inspect.signature(ContextEngine.recall).parameters) - {"self"}
    assert engine_params == set(METHODS["recall"].params)


def test_ingest_wire_params_match() -> None:
    engine_params = set(inspect.signature(ContextEngine.ingest).parameters) - {"self"}
    assert engine_params == set(METHODS["ingest"].params)
