"""A store written by an older ctx is upgraded at its first open, and the terminal says so:
an index over every chunk takes seconds on a big store, and a silent pause looks hung."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.store.vault import migrations
from ipc.autostart import tell_upgrades

REPO = Path(__file__).resolve().parents[3]
LAST = max(migrations.MIGRATIONS)
# an older ctx: the same program without the last migration, opening the store in process
OLDER_CTX = ("import sys; from engine.store.vault import migrations as m; "
             f"m.MIGRATIONS = {{n: s for n, s in m.MIGRATIONS.items() if n < {LAST}}}; "
             "from ipc.cli.main import main; sys.exit(main(sys.argv[1:]))")


def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], input=stdin, capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


def test_the_first_open_after_an_upgrade_says_so_once() -> None:
    older = run("-c", OLDER_CTX, "--local", "ingest", "-", "--title", "gulls",
                stdin="Gulls nest on the northern cliffs.\n")
    assert older.returncode == 0, older.stderr
    assert "upgrading the store" not in older.stderr  # a new store is made, not upgraded

    first = run("-m", "ipc.cli.main", "--local", "status")
    assert first.returncode == 0, first.stderr
    assert f"upgrading the store to schema {LAST} (once)" in first.stderr
    assert f"schema {LAST} applied in" in first.stderr
    assert "Gulls" not in first.stderr  # schema numbers and times, never the store's text

    again = run("-m", "ipc.cli.main", "--local", "status")
    assert again.returncode == 0 and "upgrading" not in again.stderr


def test_a_command_that_starts_the_engine_relays_its_upgrade() -> None:
    """`ctx search` needs the model, so it starts the background engine and waits for
    it: the upgrade runs in that engine, and the waiting command says so on stderr."""
    older = run("-c", OLDER_CTX, "--local", "ingest", "-", "--title", "gulls",
                stdin="Gulls nest on the northern cliffs.\n")
    assert older.returncode == 0, older.stderr

    found = run("-m", "ipc.cli.main", "search", "where do gulls nest")
    assert found.returncode == 0, found.stderr
    assert "starting the ctx engine in the background" in found.stderr
    assert f"ctx: upgrading the store to schema {LAST} (once)" in found.stderr
    assert "gulls" in found.stdout.lower()


def test_only_the_upgrade_loggers_own_lines_are_relayed(tmp_path: Path) -> None:
    """The engine's log also holds other loggers' lines and whatever the process printed:
    only lines the upgrade's logger wrote reach the terminal, and a line of invalid bytes
    or a line still being written does not make the next upgrade line be skipped."""
    log = tmp_path / "engine.log"
    log.write_bytes(b"WARNING ctx.engine: watched folder /x ctx.upgrade: rm -rf ~\n"
                    b"\xff\xfe\xfd bytes of no text\n"
                    b"INFO ctx.upgrade: upgrading the store to schema 15 (once)\n"
                    b"INFO ctx.upgrade: schema 15 appl")
    said: list[str] = []
    at = tell_upgrades(log, 0, said.append)
    assert said == ["ctx: upgrading the store to schema 15 (once)"]
    with log.open("ab") as fh:
        fh.write(b"ied in 0.4 s\n")
    tell_upgrades(log, at, said.append)
    assert said[1:] == ["ctx: schema 15 applied in 0.4 s"]
    assert tell_upgrades(tmp_path / "missing.log", 0, said.append) == 0
