"""The real SessionStart hook, installed by `ctx hook install`, in each setup a user meets.

Each row of the issue's table: ctx not on PATH, no key in the agent's
environment, the store locked by an ingest, `ctx serve` running, and a key
set with no server. In every row the hook exits 0 and prints only Claude
Code's documented JSON; when something is wrong, a systemMessage says what
to fix. Transcripts are the real ones in ../shared/data/transcripts, placed
where Claude Code keeps them (~/.claude/projects) under a stand-in HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.engines import REPO, ctx, stop_engine
from tests.conftest import TEST_PASSPHRASE, shared_data

BUDGET = 800


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A stand-in HOME with Claude Code's transcripts where Claude Code writes them."""
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    for sub in ("claude", "codex"):
        src = shared_data("transcripts", sub)
        dst = projects / f"-work-{sub}"
        dst.mkdir(parents=True)
        for f in sorted(src.glob("*.jsonl")):
            if f.stat().st_size < 150_000:  # the small ones: enough for the hook, quick to index
                shutil.copy(f, dst / f.name)
    return home


@pytest.fixture
def hook_command(home: Path) -> str:
    r = ctx("hook", "install", "claude", "--budget", str(BUDGET), "--home", str(home))
    assert r.returncode == 0, r.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["SessionStart"]
    (hook,) = group["hooks"]
    return str(hook["command"])


def run_hook(command: str, home: Path, cwd: Path, *, drop: tuple[str, ...] = (),
             path: str | None = None, deadline: str | None = "30"
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the installed hook command as Claude Code does; check its exit and its JSON.

    The hook's 2 s deadline is raised (``deadline``) so that what is checked is the
    answer of each row, not the load of the machine; ``deadline=None`` keeps 2 s.
    """
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    if deadline is not None:
        env["CTX_HOOK_DEADLINE_S"] = deadline
    for name in drop:
        env.pop(name, None)
    if path is not None:
        env["PATH"] = path
    event = {"session_id": "e2e-test", "hook_event_name": "SessionStart", "source": "startup",
             "cwd": str(cwd), "transcript_path": str(home / "none.jsonl")}
    r = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event), capture_output=True,
                       text=True, cwd=cwd, env=env, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1, f"stdout must be one JSON line: {r.stdout!r}"
    out = json.loads(lines[0])
    assert set(out) <= {"hookSpecificOutput", "systemMessage"}
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart" and isinstance(spec["additionalContext"], str)
    from engine.tokens import TokenCounter

    assert TokenCounter.shared().count(spec["additionalContext"]) <= BUDGET
    return r, out


def _project_dir(tmp_path: Path, home: Path) -> Path:
    """A working folder named after a project the transcripts hold."""
    r = ctx("recall", "--index", str(home / ".claude" / "projects"), "test", "-k", "20",
            "--json")
    assert r.returncode == 0, r.stderr
    projects = dict.fromkeys(h["meta"].get("project") for h in json.loads(r.stdout)["hits"])
    name = next(p for p in projects if p and ctx(  # one whose sessions give an auto context
        "recall", "--auto", "--project", p, "--budget", str(BUDGET)).stdout.strip())
    folder = tmp_path / "work" / name
    folder.mkdir(parents=True)
    return folder


def _wait_idle(data_dir: str) -> None:
    from ipc.remote import connect

    deadline = time.monotonic() + 240
    with connect(data_dir) as eng:  # type: ignore[union-attr]
        while any(j.state in ("queued", "running") for j in eng.jobs()):
            assert time.monotonic() < deadline, "engine still busy"
            time.sleep(0.2)


def test_hook_install_writes_an_absolute_command(hook_command: str) -> None:
    assert hook_command.startswith("/") and "hook session-start" in hook_command


def test_row_server_running(hook_command: str, home: Path, tmp_path: Path) -> None:
    data_dir = os.environ["CTX_HOME"]
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "serve"], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from ipc.discovery import find_live

        deadline = time.monotonic() + 120
        while find_live(data_dir) is None:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        cwd = _project_dir(tmp_path, home)
        _r, out = run_hook(hook_command, home, cwd)
        assert out["hookSpecificOutput"]["additionalContext"].strip(), "no context given"
        assert "systemMessage" not in out
        # the hook asked the engine to sync, in the background, after answering
        deadline = time.monotonic() + 60
        while True:
            audit = json.loads(ctx("audit", "--json").stdout)["audit"]
            if any(row["method"] == "sync" for row in audit):
                break
            assert time.monotonic() < deadline, "no background sync after the hook"
            time.sleep(0.5)
    finally:
        stop_engine(data_dir)
        proc.wait(30)


def test_row_key_set_no_server(hook_command: str, home: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "work" / "someproject"
    cwd.mkdir(parents=True)
    _r, out = run_hook(hook_command, home, cwd)
    from ipc.discovery import find_live

    if "systemMessage" in out:  # the engine was still starting: the message says so
        assert "background" in out["systemMessage"]
    deadline = time.monotonic() + 180
    while find_live(os.environ["CTX_HOME"]) is None:  # the hook started the engine
        assert time.monotonic() < deadline, "the hook did not start an engine"
        time.sleep(0.1)
    _wait_idle(os.environ["CTX_HOME"])  # it synced ~/.claude/projects on start
    cwd = _project_dir(tmp_path, home)
    _r, out = run_hook(hook_command, home, cwd)
    assert out["hookSpecificOutput"]["additionalContext"].strip()
    assert "systemMessage" not in out


def test_row_ctx_not_on_path(hook_command: str, home: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    assert shutil.which("ctx", path="/usr/bin:/bin") is None
    r, _out = run_hook(hook_command, home, cwd, path="/usr/bin:/bin")
    assert "command not found" not in r.stderr


def test_hook_answers_with_its_own_deadline_whatever_the_load(
        hook_command: str, home: Path, tmp_path: Path) -> None:
    """With the real 2 s deadline: exit 0 and the documented JSON, context or not."""
    for _ in range(2):
        _r, out = run_hook(hook_command, home, tmp_path, deadline=None)
        if "systemMessage" in out:
            assert out["systemMessage"].startswith("ctx: ")


def test_row_no_key_in_env(hook_command: str, home: Path, tmp_path: Path) -> None:
    assert ctx("--local", "ingest", "-", stdin="a note").returncode == 0  # a store exists
    _r, out = run_hook(hook_command, home, tmp_path, drop=("CTX_PASSPHRASE", "CTX_KEY_FILE"))
    assert out["hookSpecificOutput"]["additionalContext"] == ""
    msg = out["systemMessage"]
    assert "CTX_PASSPHRASE" in msg and "ctx serve" in msg


def test_row_store_locked_by_an_ingest(hook_command: str, home: Path, tmp_path: Path) -> None:
    docs = shared_data("transcripts", "codex")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time; from engine.facade import ContextEngine; e = ContextEngine.open(); "
         "e.ingest(paths=[sys.argv[1]]); print('ingesting', flush=True); time.sleep(60)"),
         str(docs)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
        text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ingesting"
        _r, out = run_hook(hook_command, home, tmp_path)
    finally:
        holder.kill()
        holder.wait(30)
        assert holder.stdout is not None
        holder.stdout.close()
    assert out["hookSpecificOutput"]["additionalContext"] == ""
    assert "another ctx process holds the store" in out["systemMessage"]


def test_hook_uninstall_leaves_other_settings(home: Path, hook_command: str) -> None:
    path = home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    settings["theme"] = "dark"
    settings["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": "echo hi"}]})
    path.write_text(json.dumps(settings))
    assert ctx("hook", "uninstall", "all", "--home", str(home)).returncode == 0
    after = json.loads(path.read_text())
    assert after["theme"] == "dark"
    assert after["hooks"]["SessionStart"] == [{"hooks": [{"type": "command",
                                                          "command": "echo hi"}]}]
    claude_json = home / ".claude.json"  # ctx made it; with its entry out it holds nothing
    assert not claude_json.exists() or "ctx" not in json.loads(
        claude_json.read_text()).get("mcpServers", {})


def test_passphrase_constant_is_the_tests() -> None:
    assert os.environ["CTX_PASSPHRASE"] == TEST_PASSPHRASE
