"""A --data-dir that `ctx` refuses is left exactly as it was: nothing created, locked,
logged or chmodded in it.

Real `ctx` processes. Before, a command that needs the model (`search`,
`ingest`) probed the store by taking its lock and then started a background
engine, so a typo made the folder with logs/engine.log, engine.lock and
engine-start.lock before the engine said store_not_initialized, a foreign folder
got the same files beside not_a_store, and `ctx init` made a shared 1777 folder
owner-only without a word.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.agents.engines import ctx


def _tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (and root) with its mode: what a refusal must not change."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root.parent)): oct(p.lstat().st_mode)
            for p in [root, *sorted(root.rglob("*"))]}


@pytest.mark.parametrize("args", [("search", "tides"), ("ingest", "-"), ("status",),
                                  ("build", "tides"), ("recall", "--auto")])
def test_a_typo_data_dir_is_refused_and_never_made(args: tuple[str, ...], tmp_path: Path) -> None:
    typo = tmp_path / "ctx-stroe"
    done = ctx("--data-dir", str(typo), *args, stdin="some text")
    assert done.returncode == 4, done.stderr
    assert "[store_not_initialized]" in done.stderr and str(typo) in done.stderr
    assert not typo.exists()


@pytest.mark.parametrize("args", [("search", "tides"), ("ingest", "-"), ("status",),
                                  ("--local", "search", "tides")])
def test_a_foreign_folder_is_refused_and_gets_nothing(args: tuple[str, ...],
                                                      tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "holiday.jpg").write_bytes(b"\xff\xd8 not a store")
    before = _tree(folder)
    done = ctx("--data-dir", str(folder), *args, stdin="some text")
    assert done.returncode == 4, done.stderr
    assert "[not_a_store]" in done.stderr
    assert _tree(folder) == before


@pytest.mark.skipif(os.name != "posix", reason="modes are POSIX")
def test_init_in_a_shared_folder_is_refused_with_its_mode_kept(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    done = ctx("--data-dir", str(shared), "init")
    assert done.returncode == 4, done.stderr
    assert "[not_a_store]" in done.stderr and "shared with other users" in done.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert list(shared.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="modes are POSIX")
def test_init_in_an_own_open_folder_says_it_made_it_owner_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o755)
    done = ctx("--data-dir", str(mine), "init")
    assert done.returncode == 0, done.stderr
    assert "owner-only" in done.stderr and "755" in done.stderr
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700
