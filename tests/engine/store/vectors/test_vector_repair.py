"""Missing or damaged vectors are rebuilt from the vault; Chroma in a long-running process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from engine.api import Event, JobChanged
from engine.errors import VectorsDamaged
from engine.facade import ContextEngine
from engine.metrics import ALERT_VECTOR_REBUILD


@pytest.fixture(autouse=True)
def _embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the embedded Chroma store (the default keeps vectors in
    memory, tests/engine/store/vectors/test_vector_snapshot.py)."""
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")

REPO = Path(__file__).resolve().parents[4]


def _fill(eng: ContextEngine, n: int = 20) -> None:
    for i in range(n):
        eng.wait(eng.ingest(text=f"Log {i}: the lighthouse keeper counted {i} ships in the "
                                 "fog near the northern reef. " * 6, title=f"log {i}"))


def _vector_hits(eng: ContextEngine) -> list[int]:
    from engine.flows.search.lanes import vector_lane
    from engine.store.vault.rows import Filters

    ids, _, _ = vector_lane(eng.rt, "lighthouse keeper ships fog", 10, Filters())
    return ids


def test_deleted_vectors_are_rebuilt_on_open(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        _fill(eng)
        chunks = eng.status().chunks
        expected = _vector_hits(eng)
    shutil.rmtree(data_dir / "vectors")
    with ContextEngine.open(data_dir) as eng:
        repair = [j for j in eng.jobs() if j.kind == "repair"]
        assert len(repair) == 1
        assert eng.wait(repair[0].id).state == "done"
        status = eng.status()
        assert status.vectors == chunks
        assert ALERT_VECTOR_REBUILD not in status.alerts
        assert _vector_hits(eng) == expected
        eng.wait(eng.ingest(text="A new note about gulls.", title="gulls"))
        assert eng.status().vectors == chunks + 1


def test_rebuild_raises_an_alert_while_it_runs(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        _fill(eng, 5)
        seen: list[dict[str, Any]] = []
        gate = threading.Event()

        def listener(event: Event) -> None:
            snap = event.job if isinstance(event, JobChanged) else None
            if snap and snap.kind == "repair" and snap.state == "running":
                seen.append(dict(eng.metrics().alerts))
                gate.set()
        eng.subscribe(listener)
        eng.repair(wait=True)
        assert gate.is_set()
        assert any(ALERT_VECTOR_REBUILD in alerts for alerts in seen)
        assert ALERT_VECTOR_REBUILD not in eng.metrics().alerts


def test_ctx_repair_sets_a_damaged_chroma_aside_and_rebuilds(data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        _fill(eng, 8)
        chunks = eng.status().chunks
    db = data_dir / "vectors" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[100:8100] = bytes((i * 31 + 7) % 256 for i in range(8000))
    db.write_bytes(bytes(data))
    with pytest.raises(VectorsDamaged):
        ContextEngine.open(data_dir)
    proc = subprocess.run([sys.executable, "-m", "ipc.cli.main", "repair"], cwd=REPO,
                          capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "set aside" in proc.stdout
    aside = [p for p in data_dir.iterdir() if p.name.startswith("vectors.damaged-")]
    assert len(aside) == 1 and (aside[0] / "chroma.sqlite3").read_bytes() == bytes(data)
    with ContextEngine.open(data_dir) as eng:
        assert eng.status().vectors == chunks
        assert _vector_hits(eng)


def test_store_deleted_and_recreated_in_the_same_process(tmp_path: Path, data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        _fill(eng, 3)
    backup = tmp_path / "backup"
    shutil.copytree(data_dir, backup)
    shutil.rmtree(data_dir)
    with ContextEngine.open(data_dir) as eng:  # a new store at the same path
        eng.wait(eng.ingest(text="a fresh start about gulls and ferries", title="fresh"))
        vectors = eng.status().vectors
        assert vectors is not None and vectors >= 1
    shutil.rmtree(data_dir)
    shutil.copytree(backup, data_dir)  # restored from the backup
    with ContextEngine.open(data_dir) as eng:
        assert eng.status().vector_store_ok
        assert _vector_hits(eng)
        eng.wait(eng.ingest(text="written after the restore", title="after"))
        assert eng.status().vectors == eng.status().chunks
