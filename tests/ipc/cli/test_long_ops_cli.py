"""Long operations through real `ctx` processes and a real background engine (issue 32):
`ctx delete` follows its job and returns (or hands back its id), `ctx status` lists the
job, `ctx stop` stops the engine, `ctx repair`/`ctx key rotate` name it and stop it when
asked, `ctx compact` gives space back, and a transcript folder deleted from disk is
reported once and can be forgotten."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ipc.connection import ConnectionInfo, pid_alive
from ipc.discovery import find_live
from tests.agents.engines import ctx
from tests.conftest import shared_data


def _folder(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(n):
        (folder / f"n{i:03d}.md").write_text(f"# Note {i}\n\n" + f"Harbour note {i}. " * 300)
    return folder


def _engine_started(folder: Path) -> ConnectionInfo:
    r = ctx("ingest", str(folder), "--json")  # starts the background engine
    assert r.returncode == 0, r.stderr
    info = find_live(os.environ["CTX_HOME"])
    assert info is not None
    return info


def test_delete_runs_as_a_job_the_cli_follows(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 30)
    _engine_started(folder)
    r = ctx("delete", str(folder / "n000.md"), "--no-wait", "--json")
    assert r.returncode == 0, r.stderr
    started = json.loads(r.stdout)
    assert started["deleted"] == 1 and started["job"]
    r = ctx("delete", str(folder))  # the rest: followed to its end
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("deleted 29 source(s) (") and "chunks)" in r.stdout
    r = ctx("status", "--json")
    status = json.loads(r.stdout)
    assert status["status"]["sources"] == 0 and status["status"]["served"] is True
    assert status["jobs"] == []  # nothing left running
    r = ctx("audit", "--json")
    methods = [row["method"] for row in json.loads(r.stdout)["audit"]]
    assert "delete_job" in methods and "delete" in methods


def test_a_delete_job_reads_as_a_delete_not_an_ingest() -> None:
    """`ctx status` (and the app, which reads the same description) and the CLI's
    progress line say what a delete job does: sources removed, chunks; never files."""
    import io

    from engine import JobSnapshot
    from ipc.cli.progress import JobProgress
    from ipc.status_text import progress_text

    snap = JobSnapshot.from_dict({"id": "d" * 16, "kind": "delete", "state": "running",
                                  "created": 0.0, "files_total": 116, "files_done": 40,
                                  "chunks": 22000})
    assert progress_text(snap).startswith("deleting: 40 of 116 sources (34%)")
    line = JobProgress(io.StringIO()).line(snap)
    assert line.startswith("deleting: 40/116 sources, 22,000 chunks removed"), line
    compact = JobSnapshot.from_dict({"id": "c" * 16, "kind": "compact", "state": "running",
                                     "created": 0.0, "current": "vault"})
    assert progress_text(compact) == "compacting"
    assert JobProgress(io.StringIO()).line(compact) == "compacting: the vault"


def test_stop_stops_the_background_engine(tmp_path: Path) -> None:
    info = _engine_started(_folder(tmp_path, 1))
    r = ctx("stop")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"stopped the background engine (pid {info['pid']})"
    assert not pid_alive(info["pid"]) and find_live(os.environ["CTX_HOME"]) is None
    r = ctx("stop")
    assert r.returncode == 0 and "no background engine runs" in r.stdout


def test_repair_and_rotate_name_the_engine_and_stop_it_when_asked(tmp_path: Path) -> None:
    info = _engine_started(_folder(tmp_path, 2))
    r = ctx("repair")  # no terminal to ask on: refused, saying who holds the store
    assert r.returncode == 4, r.stderr
    assert "[store_locked]" in r.stderr and f"pid {info['pid']}" in r.stderr
    assert "ctx stop" in r.stderr
    r = ctx("repair", "--stop")
    assert r.returncode == 0, r.stderr
    assert "rebuilt" in r.stdout and not pid_alive(info["pid"])
    info = _engine_started(tmp_path / "notes")  # started again by a command needing it
    r = ctx("key", "rotate", "--stop")
    assert r.returncode == 0, r.stderr
    assert "a new data key" in r.stdout and not pid_alive(info["pid"])
    r = ctx("search", "harbour note", "--json")  # the store opens under its new key
    assert r.returncode == 0 and json.loads(r.stdout)["hits"], r.stderr


def test_a_locked_store_names_its_holder(tmp_path: Path) -> None:
    info = _engine_started(_folder(tmp_path, 1))
    r = ctx("--local", "status")
    assert r.returncode == 4
    assert f"pid {info['pid']}" in r.stderr and "ctx stop" in r.stderr, r.stderr


def test_a_store_named_by_data_dir_is_stopped_by_a_stop_naming_it(tmp_path: Path) -> None:
    """With --data-dir, every hint to stop the engine names that data dir: a bare
    `ctx stop` stops the default store's engine, not this one's (review of issue 32)."""
    home = os.environ["CTX_HOME"]
    info = _engine_started(_folder(tmp_path, 1))
    stop = f"`ctx --data-dir {home} stop`"
    r = ctx("--data-dir", home, "repair")
    assert r.returncode == 4 and f"pid {info['pid']}" in r.stderr
    assert stop in r.stderr and "`ctx stop`" not in r.stderr, r.stderr
    r = ctx("--data-dir", home, "--local", "status")
    assert r.returncode == 4 and "drop --local" in r.stderr
    assert r.stderr.count(stop) == 1 and "`ctx stop`" not in r.stderr, r.stderr
    r = ctx("--data-dir", home, "stop")
    assert r.returncode == 0 and not pid_alive(info["pid"]), r.stderr
    r = ctx("--data-dir", home, "stop")
    assert r.stdout.strip() == f"no background engine runs for {home}", r.stdout


def test_ctx_serve_names_the_stop_that_stops_it(tmp_path: Path) -> None:
    """`ctx serve`'s first line names `ctx stop` (with its --data-dir), and that command
    stops it."""
    import subprocess
    import sys

    home = os.environ["CTX_HOME"]
    assert ctx("--local", "ingest", "-", stdin="the crane lifts").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "--data-dir", home,
                             "serve"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        stop = f"`ctx --data-dir {home} stop`"
        assert line.startswith("ctx: serving ") and stop in line, line
        r = ctx("--data-dir", home, "stop")
        assert r.returncode == 0 and f"pid {proc.pid}" in r.stdout, (r.stdout, r.stderr)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_compact_reports_the_space_given_back(tmp_path: Path) -> None:
    folder = _folder(tmp_path, 40)
    _engine_started(folder)
    assert ctx("delete", str(folder)).returncode == 0
    r = ctx("compact")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("compacted: ") and "given back" in r.stdout
    r = ctx("compact", "--json")
    out = json.loads(r.stdout)
    assert out["job"] and out["bytes_after"] <= out["bytes_before"]


def test_a_deleted_transcript_folder_is_reported_and_forgotten(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(shared_data("transcripts", "claude", "marot__spotter__short.jsonl"),
                sessions / "s.jsonl")
    r = ctx("recall", "--index", str(sessions))
    assert r.returncode == 0, r.stderr
    shutil.rmtree(sessions)
    r = ctx("recall", "--sync")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(f"transcript folder {sessions} is gone") == 1, r.stderr
    assert f"ctx recall --forget-folder {sessions}" in r.stderr
    r = ctx("recall", "--forget-folder", str(sessions))
    assert r.returncode == 0 and r.stdout.strip() == f"no longer synced: {sessions}", r.stderr
    r = ctx("recall", "--sync", "--json")
    assert r.returncode == 0, r.stderr
    synced = json.loads(r.stdout)["synced"]
    assert synced["missing"] == [] and str(sessions) not in synced["folders"]
    r = ctx("recall", "--forget-folder", str(sessions))
    assert r.returncode == 3 and "not in the sync list" in r.stderr
