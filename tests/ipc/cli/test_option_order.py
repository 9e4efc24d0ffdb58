"""The options every command shares work on either side of the command, and a missing
store names the `ctx init` that makes it (with the --data-dir it needs).

Real `ctx` processes. Before, `ctx init --data-dir DIR` (as the README wrote it) was an
argparse error, and store_not_initialized said "run `ctx init`", which makes the
default store, not the one asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.engines import ctx


def test_data_dir_after_the_command(tmp_path: Path) -> None:
    store = tmp_path / "my store"
    made = ctx("init", "--data-dir", str(store))
    assert made.returncode == 0, made.stderr
    assert (store / "key.json").is_file() and (store / "vault.db").is_file()
    status = ctx("status", "--json", "--local", "--data-dir", str(store))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"]["data_dir"] == str(store.resolve())
    before = ctx("--local", "--data-dir", str(store), "status", "--json")
    assert json.loads(before.stdout)["status"]["data_dir"] == str(store.resolve())


def test_the_option_after_the_command_wins(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert ctx("--data-dir", str(one), "init", "--data-dir", str(two)).returncode == 0
    assert (two / "key.json").is_file() and not one.exists()


def test_a_missing_store_names_the_init_it_needs(tmp_path: Path) -> None:
    missing = tmp_path / "no store here"
    done = ctx("--local", "status", "--data-dir", str(missing))
    assert done.returncode == 4 and "[store_not_initialized]" in done.stderr, done.stderr
    assert f"ctx --data-dir '{missing}' init" in done.stderr, done.stderr
    assert not missing.exists()


def test_restore_keeps_its_own_data_dir(tmp_path: Path) -> None:
    """`restore` has its own --data-dir (where to restore): still one option, no clash."""
    done = ctx("restore", "--help")
    assert done.returncode == 0 and done.stdout.count("--data-dir DATA_DIR ") == 1, done.stdout
