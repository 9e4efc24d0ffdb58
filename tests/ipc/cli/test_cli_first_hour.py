"""The first hour with `ctx`, as real processes (issue 21): the version, init without a
terminal, hits that name a path and lines, errors that say what is wrong with the
user's input, commands that never end in silence, metrics in their own units."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.engines import stop_engine
from tests.ipc.cli.test_cli import REPO, ctx


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small project: code two folders down, and notes, under one root."""
    root = tmp_path / "proj"
    (root / "pkg" / "net").mkdir(parents=True)
    lines = ["import os", "", "", "def alpha():", '    """Alpha reads the ferry timetable."""',
             "    return 1", "", "", "def beta():", "    return 2", ""]
    (root / "pkg" / "net" / "server.py").write_text("\n".join(lines))
    (root / "notes.md").write_text("# Notes\n\nThe night ferry leaves at 22:40.\n\n"
                                   "## Trains\n\nThe first train departs at 06:15.\n")
    return root


# -- 1. the version ------------------------------------------------------------------------


def test_version_is_the_bundle_launchers_answer() -> None:
    r = ctx("--version")
    assert r.returncode == 0, r.stderr
    launcher = subprocess.run([sys.executable, str(REPO / "packaging" / "launcher.py"),
                               "--version"], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60,
                              check=False)
    assert launcher.returncode == 0, launcher.stderr
    assert r.stdout == launcher.stdout and r.stdout.startswith("ctx ")


# -- 2. init with no terminal and no keychain ----------------------------------------------


def test_init_without_terminal_or_keychain_names_every_way_to_unlock(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CTX_PASSPHRASE", "CTX_KEY_FILE", "XDG_CONFIG_HOME")}
    env["HOME"] = str(tmp_path / "home")
    r = subprocess.run([sys.executable, "-m", "ipc.cli.main", "--data-dir", str(store), "init"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=REPO,
                       env=env, timeout=60, check=False)
    assert r.returncode == 4 and "key_unavailable" in r.stderr
    for way in ("--passphrase-stdin", "CTX_PASSPHRASE", "CTX_KEY_FILE", "Later commands"):
        assert way in r.stderr, way
    if sys.platform.startswith("linux"):  # the default key file, where ctx looks by itself
        assert str(tmp_path / "home" / ".config" / "ctx" / "keyfile") in r.stderr
    assert not (store / "engine.lock").exists()


def test_init_says_how_later_commands_unlock(tmp_path: Path) -> None:
    r = ctx("--data-dir", str(tmp_path / "store"), "init", "--no-keychain")
    assert r.returncode == 0, r.stderr
    assert "CTX_PASSPHRASE" in r.stdout and "CTX_KEY_FILE" in r.stdout
    lock = tmp_path / "store" / "engine.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600


# -- 3. hits and headers name the path and lines ------------------------------------------


def test_hits_and_headers_name_the_path_under_the_root_and_the_lines(tree: Path) -> None:
    assert ctx("--local", "ingest", str(tree)).returncode == 0
    r = ctx("--local", "search", "ferry timetable alpha", "-k", "2", "--json")
    hits = {h["source"]: h for h in json.loads(r.stdout)["hits"]}
    code = hits[str(tree / "pkg" / "net" / "server.py")]
    assert code["path"] == "pkg/net/server.py" and code["root"] == str(tree)
    first, last = code["lines"]
    lines = (tree / "pkg" / "net" / "server.py").read_text().splitlines()
    assert "\n".join(lines[first - 1:last]).strip() == code["text"]
    r = ctx("--local", "search", "ferry timetable alpha", "-k", "2")
    assert f"pkg/net/server.py:{first}-{last}" in r.stdout
    r = ctx("--local", "build", "ferry timetable alpha", "--budget", "400")
    assert f"pkg/net/server.py:{first}-{last}" in r.stdout
    r = ctx("--local", "build", "ferry timetable alpha", "--budget", "400", "--format", "json")
    items = {i["path"]: i for i in json.loads(r.stdout)["items"]}
    assert items["pkg/net/server.py"]["root"] == str(tree)
    assert items["pkg/net/server.py"]["lines"] == [first, last]


# -- 4. errors about the user's input ------------------------------------------------------


def test_an_empty_query_says_so_the_same_way_served_and_local() -> None:
    assert ctx("ingest", "-", stdin="Gulls nest on the northern cliffs.\n").returncode == 0
    served = ctx("search", "", "--json")  # the background engine answers
    assert served.returncode == 2
    assert "the query is empty" in served.stderr and "withheld" not in served.stderr
    stop_engine(os.environ["CTX_HOME"])
    local = ctx("--local", "search", "", "--json")
    assert local.returncode == 2
    assert json.loads(served.stdout) == json.loads(local.stdout)
    assert json.loads(local.stdout)["error"]["details"]["field"] == "search.query"


def test_recall_index_of_a_missing_folder_is_not_found(tmp_path: Path) -> None:
    r = ctx("recall", "--index", str(tmp_path / "nope"))
    assert r.returncode == 3 and "not_found" in r.stderr and "no such folder" in r.stderr


# -- 5. no silent endings --------------------------------------------------------------------


def test_recall_without_arguments_is_a_usage_error() -> None:
    r = ctx("recall")
    assert r.returncode == 2
    assert "QUERY" in r.stderr and "--auto" in r.stderr and "--index" in r.stderr


def test_build_with_budget_0_says_what_it_gives() -> None:
    r = ctx("--local", "build", "anything", "--budget", "0")
    assert r.returncode == 2 and "[invalid_budget]" in r.stderr and "empty context" in r.stderr


def test_an_empty_build_says_why() -> None:
    r = ctx("--local", "build", "nothing is stored yet", "--budget", "300")
    assert r.returncode == 0 and "the context is empty" in r.stderr


def test_delete_resolves_a_relative_path_as_ingest_does(tree: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args],
                              capture_output=True, text=True, cwd=tree, timeout=120,
                              check=False, env={**os.environ, "PYTHONPATH": str(REPO)})

    assert run("ingest", "notes.md").returncode == 0  # starts the engine (its cwd is not ours)
    r = run("delete", "notes.md")
    assert r.returncode == 0 and "deleted 1" in r.stdout, r.stderr
    assert run("delete", "notes.md").returncode == 3  # gone


# -- 6. metrics in their units ----------------------------------------------------------------


def test_status_prints_token_accuracy_as_a_percent(tree: Path) -> None:
    assert ctx("--local", "ingest", str(tree)).returncode == 0
    assert ctx("build", "ferry", "--budget", "200").returncode == 0  # the served engine
    r = ctx("status")
    (line,) = [ln for ln in r.stdout.splitlines() if "token_accuracy_percent" in ln]
    assert "%" in line and " ms" not in line
    (line,) = [ln for ln in r.stdout.splitlines() if "build.duration_ms" in ln]
    assert " ms" in line
