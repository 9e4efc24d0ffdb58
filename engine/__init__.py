"""ctx's core: the context engine, free of Qt and ZeroMQ.

The public API is what ``__all__`` names; everything else is internal.
Heavy modules load on first use, so ``import engine`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from engine.offline import keep_offline

keep_offline()  # before any library loads: no telemetry, no download (engine/offline.py)

__all__ = [
    "Config",
    "ConfigError",
    "ContextEngine",
    "ContextPayload",
    "CtxError",
    "EngineClosed",
    "KeyUnavailable",
    "LiveItem",
    "NotFound",
    "PayloadItem",
    "SearchHit",
    "StoreNotInitialized",
    "TokenCounter",
    "WrongKey",
    "init_store",
    "keychain_available",
    "load_config",
    "probe_store",
]

_WHERE = {
    "ContextEngine": "engine.facade", "init_store": "engine.facade", "Config": "engine.config",
    "load_config": "engine.config", "ContextPayload": "engine.types",
    "PayloadItem": "engine.types", "SearchHit": "engine.types", "LiveItem": "engine.types",
    "CtxError": "engine.errors",
    # The errors a GUI or client tells apart (each has a stable code and name).
    **{n: "engine.errors" for n in ("ConfigError", "EngineClosed", "KeyUnavailable", "NotFound",
                                    "StoreNotInitialized", "WrongKey")}, "TokenCounter": "engine.tokens", "probe_store": "engine.access",
    "keychain_available": "engine.crypto.keys",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
