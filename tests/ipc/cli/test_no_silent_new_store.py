"""A data dir that holds any part of a store is never made into a new store without
`ctx init` (issue 32: with key.json and vault.db gone, `ctx --local search crane`
made a new empty store with a new key and said "no results").

Real `ctx` processes on the default data dir (the one commands create on first use).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.agents.engines import ctx, stop_engine


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.lstat().st_mode, p.lstat().st_size) for p in sorted(root.iterdir())}


@pytest.fixture
def leftovers(tmp_path: Path) -> Path:
    """A store whose key.json and vault.db were removed; its other parts stay."""
    root = Path(os.environ["CTX_HOME"])
    made = ctx("--local", "ingest", "-", "--title", "cranes", stdin="the crane lifts steel")
    assert made.returncode == 0, made.stderr
    (root / "config.toml").write_text("[search]\n", encoding="utf-8")
    (root / "key.json").unlink()
    (root / "vault.db").unlink()
    assert (root / "vectors.snap").exists()
    return root


@pytest.mark.parametrize("args", [("--local", "search", "crane"), ("search", "crane"),
                                  ("--local", "status"), ("--local", "ingest", "-")])
def test_leftovers_of_a_store_are_refused_not_made_new(leftovers: Path,
                                                       args: tuple[str, ...]) -> None:
    before = _tree(leftovers)
    try:
        done = ctx(*args, stdin="new text")
    finally:
        stop_engine()
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "[vault_missing]" in done.stderr and "vectors.snap" in done.stderr
    assert "ctx init" in done.stderr and "no results" not in done.stdout
    after = _tree(leftovers)
    assert "key.json" not in after and "vault.db" not in after
    assert {k: v for k, v in after.items() if k in before} == before


def test_init_over_leftovers_is_refused_too(leftovers: Path) -> None:
    done = ctx("init")
    assert done.returncode == 4, done.stderr
    assert "[vault_missing]" in done.stderr
    assert not (leftovers / "key.json").exists()


def test_init_on_a_sound_store_says_one_exists(tmp_path: Path) -> None:
    assert ctx("--local", "ingest", "-", stdin="the crane lifts steel").returncode == 0
    done = ctx("init")
    assert done.returncode == 4, done.stderr
    assert "[store_exists]" in done.stderr and "a store already exists" in done.stderr
    assert "config_invalid" not in done.stderr


def test_restore_over_leftovers_is_refused(tmp_path: Path) -> None:
    root = Path(os.environ["CTX_HOME"])
    assert ctx("--local", "ingest", "-", stdin="the crane lifts steel").returncode == 0
    backup = tmp_path / "store.ctxb"
    assert ctx("--local", "backup", str(backup)).returncode == 0
    (root / "key.json").unlink()
    (root / "vault.db").unlink()
    before = _tree(root)
    done = ctx("restore", str(backup))
    assert done.returncode == 4, done.stderr
    assert "[vault_missing]" in done.stderr
    assert _tree(root) == before


def test_leftovers_in_a_named_data_dir_name_it_in_each_command(tmp_path: Path) -> None:
    """With --data-dir, the commands vault_missing offers act on that data dir: a bare
    `ctx init` or `ctx restore BACKUP` would make a store in the default one instead."""
    root = tmp_path / "named"
    assert ctx("--data-dir", str(root), "init").returncode == 0
    made = ctx("--data-dir", str(root), "--local", "ingest", "-", stdin="the crane lifts")
    assert made.returncode == 0, made.stderr
    (root / "key.json").unlink()
    (root / "vault.db").unlink()
    done = ctx("--data-dir", str(root), "--local", "status")
    assert done.returncode == 4 and "[vault_missing]" in done.stderr, done.stderr
    assert f"`ctx --data-dir {root} restore BACKUP`" in done.stderr, done.stderr
    assert f"`ctx --data-dir {root} init`" in done.stderr, done.stderr
    (root / "key.json").write_text("{}")  # vault.db alone missing: the same
    done = ctx("--data-dir", str(root), "--local", "status")
    assert done.returncode == 4, done.stderr
    if "[vault_missing]" in done.stderr:
        assert f"`ctx --data-dir {root} init`" in done.stderr, done.stderr


def test_a_folder_of_one_other_file_reads_in_the_singular(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "todo.txt").write_text("milk")
    done = ctx("--data-dir", str(root), "--local", "status")
    assert done.returncode == 4 and "[not_a_store]" in done.stderr, done.stderr
    assert "1 other entry" in done.stderr and "entries" not in done.stderr, done.stderr
