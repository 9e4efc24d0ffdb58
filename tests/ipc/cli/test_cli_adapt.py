"""`ctx status` says what recall's learned reader learned from (a real process)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine.facade import ContextEngine
from tests.engine.flows.recall.test_recall_adapt import FIT, synced, write_sessions
from tests.ipc.cli.test_cli import ctx


def test_status_says_what_recall_learned_from(tmp_path: Path) -> None:
    data_dir = Path(os.environ["CTX_HOME"])  # the store the ctx command opens
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(FIT, encoding="utf-8")
    r = ctx("--local", "status")
    assert r.returncode == 0 and "recall adapt: on, nothing learned yet" in r.stdout, r.stdout
    with ContextEngine.open(data_dir) as e:
        synced(e, write_sessions(tmp_path / "t", 12)[0].parent)
        adapt = e.status().adapt
        assert adapt is not None
        pairs = adapt.pairs
    r = ctx("--local", "status")
    assert r.returncode == 0, r.stderr
    assert f" from {pairs} request/answer pairs in 12 sessions (" in r.stdout, r.stdout
    r = ctx("--local", "status", "--json")
    adapt = json.loads(r.stdout)["status"]["adapt"]
    assert adapt["enabled"] and adapt["pairs"] == pairs and adapt["sessions"] == 12
