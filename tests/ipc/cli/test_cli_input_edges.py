"""Input edge cases of the `ctx` command (issue 32's minor items), real processes: each
says what is wrong and names what it is about, in process and through the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.engines import ctx, stop_engine


@pytest.fixture
def stored() -> None:
    done = ctx("--local", "ingest", "-", "--title", "cranes", stdin="the crane lifts steel")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("local", [True, False])
def test_build_live_with_an_object_names_the_field(stored: None, tmp_path: Path,
                                                   local: bool) -> None:
    live = tmp_path / "live.json"
    live.write_text(json.dumps({"kind": "clipboard", "text": "steel"}), encoding="utf-8")
    try:
        done = ctx(*(["--local"] if local else []), "build", "crane", "--live", str(live))
    finally:
        stop_engine()
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "[invalid_input]" in done.stderr and "live" in done.stderr
    assert "list" in done.stderr
