"""The `ctx` command as a real process: output, JSON, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.engines import stop_engine

REPO = Path(__file__).resolve().parents[3]


def ctx(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args], input=stdin,
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ferries.md").write_text("# Ferries\n\nThe night ferry leaves the harbour at 22:40.\n")
    (root / "trains.md").write_text("# Trains\n\nThe first train to the coast departs at 06:15.\n")
    return root


def test_ingest_search_build_delete(docs: Path) -> None:
    r = ctx("ingest", str(docs), "--json")
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["jobs"][0]
    assert job["state"] == "done" and job["chunks"] == 2

    r = ctx("search", "when does the night ferry leave", "-k", "1", "--json")
    hits = json.loads(r.stdout)["hits"]
    assert r.returncode == 0 and hits[0]["source"].endswith("ferries.md")

    r = ctx("build", "night ferry", "--budget", "120", "--format", "json")
    payload = json.loads(r.stdout)
    assert r.returncode == 0 and 0 < payload["total_tokens"] <= 120
    from engine.tokens import TokenCounter

    assert TokenCounter.shared().count(payload["context"]) == payload["total_tokens"]

    r = ctx("sources", "--json")
    assert len(json.loads(r.stdout)["sources"]) == 2
    assert ctx("delete", str(docs / "trains.md")).returncode == 0
    r = ctx("delete", str(docs / "trains.md"))
    assert r.returncode == 3 and "not_found" in r.stderr
    r = ctx("audit", "--json")
    methods = {row["method"] for row in json.loads(r.stdout)["audit"]}
    assert {"search", "build_context", "ingest_job"} <= methods


def test_stdin_and_status(tmp_path: Path) -> None:
    r = ctx("ingest", "-", "--title", "pasted", stdin="Gulls nest on the northern cliffs.\n")
    assert r.returncode == 0, r.stderr
    assert "starting the ctx engine in the background" in r.stderr  # said once, on stderr
    r = ctx("status", "--json")
    status = json.loads(r.stdout)["status"]
    assert status["sources"] == 1 and status["served"] is True  # the engine ingest started
    stop_engine(tmp_path / "ctx-home")
    r = ctx("--local", "status", "--json")
    status = json.loads(r.stdout)["status"]
    assert status["sources"] == 1 and status["served"] is False
    # the default index lives in memory, read back from its sealed snapshot at open
    assert status["vector_backend"] == "memory"
    assert status["vectors_in_memory"] == {**status["vectors_in_memory"], "kind": "exact",
                                           "state": "ready", "vectors": status["chunks"]}
    r = ctx("--local", "status")
    assert r.returncode == 0 and "in memory: exact index" in r.stdout


def test_exit_codes() -> None:
    assert ctx("search").returncode == 2  # usage
    assert ctx("ingest", "-", stdin="hello there").returncode == 0
    r = ctx("search", "hello", env={"CTX_PASSPHRASE": "not the passphrase"})
    assert r.returncode == 0  # the running engine answers; the caller's key is not needed
    stop_engine(os.environ["CTX_HOME"])
    r = ctx("search", "hello", env={"CTX_PASSPHRASE": "not the passphrase"})
    assert r.returncode == 4 and "wrong_key" in r.stderr  # the background engine's error
    r = ctx("build", "hello", "--budget", "-5")
    assert r.returncode == 2 and "invalid_budget" in r.stderr


def test_missing_path_is_not_found(docs: Path) -> None:
    r = ctx("ingest", str(docs), str(docs / "nope.md"))
    assert r.returncode == 3 and "not found" in r.stderr
    r = ctx("sources", "--json")
    assert len(json.loads(r.stdout)["sources"]) == 2  # the rest was ingested


def test_locked_store_exit_code() -> None:
    from engine.facade import ContextEngine

    with ContextEngine.open():
        r = ctx("status", env={"CTX_LOCK_WAIT_S": "1"})
    assert r.returncode == 4 and "store_locked" in r.stderr
    assert "waiting" in r.stderr


def test_commands_queue_behind_the_process_that_holds_the_store(tmp_path: Path) -> None:
    """A model command waits for a --local process to release the store, then answers."""
    assert ctx("--local", "ingest", "-", stdin="The lighthouse keeper logs the tides.").returncode == 0
    release = tmp_path / "release"
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time, pathlib; from engine.facade import ContextEngine; "
            "e = ContextEngine.open(); print('held', flush=True); p = pathlib.Path(sys.argv[1])\n"
            "while not p.exists(): time.sleep(0.05)\n"
            "e.close()"), str(release)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    search = None
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        search = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "search",
                                   "lighthouse tides", "--json"], cwd=REPO, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert search.stderr is not None
        first = search.stderr.readline()
        assert "waiting" in first, first  # it queues instead of failing with store_locked
        release.touch()
        out, err = search.communicate(timeout=240)
    finally:
        release.touch()
        holder.wait(60)
        assert holder.stdout is not None
        holder.stdout.close()
        if search is not None and search.poll() is None:
            search.kill()
            search.communicate()
    assert search.returncode == 0, err
    assert "starting the ctx engine" in err and json.loads(out)["hits"]


def test_non_utf8_stdin() -> None:
    r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "ingest", "-"],
                       input=b"\xff\xfe\xfa not text", capture_output=True, cwd=REPO, timeout=120,
                       check=False)
    assert r.returncode == 2 and b"not_utf8" in r.stderr
