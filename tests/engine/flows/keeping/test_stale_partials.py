"""A backup killed (-9) mid-way leaves its hidden ``.NAME.vault.partial``; the next
backup of the store removes it wherever it was written, and nothing that is not
one of this store's own partial files (issue 32: a 47 MB partial stayed for good).

Real processes: the child is killed by its own SIGKILL once the vault's copy is on
disk, at the same point on every run (no timing)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.agents.engines import REPO, ctx

KILLED_BACKUP = """
    import os, signal, sys
    from engine import ContextEngine
    from engine.store.vault.copy import VaultCopy

    copy_to = VaultCopy.copy_to

    def copy_then_die(self, path, step):
        copy_to(self, path, step)
        os.kill(os.getpid(), signal.SIGKILL)  # the vault's copy is whole on disk: die now

    VaultCopy.copy_to = copy_then_die
    eng = ContextEngine.open(sys.argv[1], create=False)
    eng.backup(sys.argv[2])
"""


def test_the_next_backup_removes_what_a_killed_one_left(tmp_path: Path) -> None:
    root = Path(os.environ["CTX_HOME"])
    assert ctx("--local", "ingest", "-", stdin="the crane lifts steel " * 200).returncode == 0
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_BACKUP), str(root),
                             str(first / "a.ctxb")], env={**os.environ, "PYTHONPATH": str(REPO)},
                            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert killed.returncode == -9, killed.stderr
    left = first / ".a.ctxb.vault.partial"
    assert left.is_file() and left.stat().st_size > 0
    stranger = first / ".b.ctxb.vault.partial"  # not this store's: never touched
    stranger.write_bytes(b"someone else's")
    done = ctx("--local", "backup", str(second / "b.ctxb"))
    assert done.returncode == 0, done.stderr
    assert not left.exists()
    assert stranger.read_bytes() == b"someone else's"
    assert (second / "b.ctxb").is_file()
    assert sorted(p.name for p in second.iterdir()) == ["b.ctxb"]


def test_the_first_progress_line_waits_for_the_size(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """A backup's first progress line read "0 B of 0 B (0%)": nothing until the size."""
    from ipc.cli.keep_cmd import ByteProgress

    bar = ByteProgress("backup")
    bar.update(0, 0)
    assert capsys.readouterr().err == ""
    bar.update(10, 100)
    assert "backup: 10 B of 100 B (10%)" in capsys.readouterr().err
