"""`ctx recall QUERY` asks from the folder it runs in: the engine ranks that folder's
project first (issue 31). Real processes, the real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.agents.engines import REPO
from tests.engine.recall.recall_helpers import ClaudeLines, text, write_lines

QUESTION = "why did the websocket reconnect loop spin at full cpu"
ANSWER = ("The websocket reconnect loop spun at full cpu because the backoff delay was "
          "reset to zero after every failed attempt; it now doubles up to 30 seconds.")


def _ctx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", "--local", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
                          env=env)


def test_recall_ranks_the_project_of_its_folder_first(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name in ("alpha", "beta"):
        lines = ClaudeLines(session=f"sess-{name}", cwd=f"/home/u/src/{name}")
        write_lines(sessions / f"{name}.jsonl", [
            lines.user(f"{QUESTION}? please fix it"),
            lines.assistant([text(ANSWER)], msg_id=f"msg_{name}")])
    r = _ctx("recall", "--index", str(sessions), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("beta", "alpha"):
        inside = tmp_path / name / "web" / "src"
        inside.mkdir(parents=True)
        (tmp_path / name / ".git").mkdir()
        r = _ctx("recall", QUESTION, "-k", "5", "--json", cwd=inside)
        assert r.returncode == 0, r.stderr
        projects = [h["meta"]["project"] for h in json.loads(r.stdout)["hits"]]
        assert projects[0] == name, projects
        assert {"alpha", "beta"} <= set(projects)  # the other project still follows
