"""What each wire method calls on the engine, and how its result goes on the wire.

:data:`CALLS` is the server's explicit method table: a method's name maps to
a function of (engine, validated params) that returns the engine's typed
result (``engine.api``); :func:`engine.jsonable` turns that result into its wire JSON
(``to_dict``). ``ping`` and ``shutdown`` are the server's own and are not here.
The params have passed the method's schema (ipc.wire), so their names are
the engine's parameter names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine import EngineAPI

__all__ = ["CALLS"]

Call = Callable[[EngineAPI, Mapping[str, Any]], Any]

CALLS: dict[str, Call] = {
    "status": lambda e, p: e.status(),
    "metrics": lambda e, p: e.metrics(),
    "job": lambda e, p: e.job(p["job_id"]),
    "jobs": lambda e, p: e.jobs(),
    "cancel_job": lambda e, p: e.cancel_job(p["job_id"]),
    "audit": lambda e, p: e.audit(**p),
    "ingest": lambda e, p: {"job_id": str(e.ingest(**p))},
    "build_context": lambda e, p: e.build_context(**p),
    "search": lambda e, p: e.search(**p),
    "recall": lambda e, p: e.recall(**p),
    "sources": lambda e, p: e.sources(**p),
    "delete": lambda e, p: e.delete(p["source"], wait=p.get("wait", True)),
    "compact": lambda e, p: e.compact(wait=p.get("wait", True)),
    "rotate_key": lambda e, p: e.rotate_key(wait=p.get("wait", True)),
    "forget_folder": lambda e, p: {"forgotten": e.forget_folder(p["folder"])},
    "sync": lambda e, p: e.sync(**p),
    "backup": lambda e, p: e.backup(**p),
    "verify_backup": lambda e, p: e.verify_backup(**p),
    "export": lambda e, p: e.export(**p),
}
