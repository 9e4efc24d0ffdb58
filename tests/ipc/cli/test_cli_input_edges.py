"""Input edge cases of the `ctx` command (issue 32's minor items), real processes: each
says what is wrong and names what it is about, in process and through the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.engines import REPO, ctx, stop_engine


def ctx_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`ctx` run from ``cwd`` (relative paths are the user's)."""
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=180, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


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


def test_kind_unknown_is_named_with_the_kinds(stored: None) -> None:
    done = ctx("--local", "search", "crane", "--kind", "nosuchkind")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "nosuchkind" in done.stderr and "unknown kind" in done.stderr
    assert "document" in done.stderr and "turn_pair" in done.stderr
    assert "no results" not in done.stdout


def test_a_relative_path_matches_as_hits_show_it(tmp_path: Path) -> None:
    (tmp_path / "requests").mkdir()
    (tmp_path / "requests" / "retry.md").write_text("retry policy with backoff\n")
    (tmp_path / "other.md").write_text("retry policy elsewhere\n")
    assert ctx("--local", "ingest", str(tmp_path)).returncode == 0
    shown = ctx_in(tmp_path, "--local", "search", "retry policy")
    assert "requests/retry.md" in shown.stdout, shown.stdout
    for prefix in ("requests/", "requests", "./requests/"):
        done = ctx_in(tmp_path, "--local", "search", "retry policy", "--path", prefix)
        assert done.returncode == 0, done.stderr
        assert "requests/retry.md" in done.stdout and "other.md" not in done.stdout, prefix


def test_an_empty_folder_says_it_is_empty(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = ctx("--local", "ingest", str(tmp_path / "empty"))
    assert done.returncode == 0, done.stderr
    assert "the folder is empty" in done.stderr


def test_empty_stdin_says_why_the_job_failed() -> None:
    done = ctx("--local", "ingest", "-", stdin="")
    assert done.returncode == 1
    assert "job failed [invalid_input]: the text is empty" in done.stderr


def test_a_name_that_is_not_utf8_is_shown_and_deleted_by_its_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9-latin1.md")
    (folder / name).write_text("the latin crane note\n")
    try:
        assert ctx("ingest", str(folder)).returncode == 0
        found = ctx("search", "latin crane")
        assert "caf\\xe9-latin1.md" in found.stdout and "caf/xe9" not in found.stdout, found.stdout
        gone = ctx("delete", str(folder / name))
        assert gone.returncode == 0, gone.stderr
        assert "deleted 1 source" in gone.stdout
        single = tmp_path / os.fsdecode(b"na\xefve.md")  # one file given by its bytes
        single.write_text("the naive heron note\n")
        added = ctx("ingest", str(single))
        assert added.returncode == 0 and "1 ingested" in added.stdout, added.stderr
        assert "na\\xefve.md" in ctx("search", "naive heron").stdout
    finally:
        stop_engine()


def test_local_on_a_served_store_says_drop_local(stored: None) -> None:
    try:
        assert ctx("search", "crane").returncode == 0  # starts the background engine
        done = ctx("--local", "status")
    finally:
        stop_engine()
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "[store_locked]" in done.stderr and "drop --local" in done.stderr


def test_repair_sets_aside_a_snapshot_that_is_a_folder(stored: None) -> None:
    root = Path(os.environ["CTX_HOME"])
    (root / "vectors.snap").unlink()
    (root / "vectors.snap").mkdir()
    (root / "vectors.snap" / "keep.txt").write_text("kept")
    done = ctx("--local", "repair")
    assert done.returncode == 0, done.stderr
    assert "set aside" in done.stdout and "internal_error" not in done.stderr
    aside = [p for p in root.iterdir() if p.name.startswith("vectors.snap.damaged-")]
    assert len(aside) == 1 and (aside[0] / "keep.txt").read_text() == "kept"
    assert (root / "vectors.snap").is_file()
    found = ctx("--local", "search", "crane")
    assert found.returncode == 0 and "crane" in found.stdout


def test_engine_start_record_is_owner_only_from_the_start(stored: None) -> None:
    """Checked while the engine runs (its next open made the file 0600; it was 0644)."""
    root = Path(os.environ["CTX_HOME"])
    old = os.umask(0o022)
    try:
        assert ctx("search", "crane").returncode == 0  # starts the background engine
        record = root / "engine-start.json"
        assert record.is_file()
        assert oct(record.stat().st_mode & 0o777) == "0o600"
    finally:
        os.umask(old)
        stop_engine()


def test_a_relative_path_matches_as_shown_from_anywhere(tmp_path: Path) -> None:
    """From a folder where ``requests/`` is not, --path requests/ still finds the hits
    that show requests/... (the engine matches it under each file's ingest folder)."""
    project = tmp_path / "project"
    (project / "requests").mkdir(parents=True)
    (project / "requests" / "retry.md").write_text("retry policy with backoff\n")
    (project / "other.md").write_text("retry policy elsewhere\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ctx("--local", "ingest", str(project)).returncode == 0
    for local in (True, False):
        try:
            done = ctx_in(elsewhere, *(["--local"] if local else []), "search",
                          "retry policy", "--path", "requests/")
        finally:
            stop_engine()
        assert done.returncode == 0, done.stderr
        assert "requests/retry.md" in done.stdout and "other.md" not in done.stdout, done.stdout
