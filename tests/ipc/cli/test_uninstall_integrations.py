"""`ctx uninstall-integrations`: what ctx set up outside its data dir goes, and it says so.

Real files (agents' settings, the XDG autostart entry), real processes (a
`ctx serve`, a program started from a stand-in installation folder) and the
real CLI in a child process. Another installation's entries stay.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipc.cli import agent_config as ac
from ipc.cli.uninstall_cmd import points_at
from ipc.login_item import Autostart

REPO = Path(__file__).resolve().parents[3]


def _ctx(*args: str, home: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", *args], env=full, cwd=home,
                          capture_output=True, text=True, timeout=120, check=False)


def _setup(home: Path, install: Path, other: str = "/opt/elsewhere/ctx") -> None:
    """What an installation at ``install`` and another ctx set up in ``home``."""
    ac.install(("claude",), home=home, cmd=[str(install / "ctx")])
    ac.install(("codex",), home=home, cmd=[other])
    Autostart(system="linux", home=home, env={"XDG_CONFIG_HOME": str(home / ".config")},
              command=[str(install / "ctx-app")]).enable()


def test_points_at_matches_whole_paths_only() -> None:
    assert points_at('"/opt/ctx/ctx" hook session-start', ["/opt/ctx"])
    assert points_at("/opt/ctx/ctx-app", ["/opt/ctx/ctx-app"])
    assert points_at("Exec=/opt/ctx/ctx-app\n", ["/opt/ctx/ctx-app"])
    assert not points_at("/opt/ctx2/ctx hook", ["/opt/ctx"])
    assert not points_at("/usr/bin/ctx-app", ["/usr/bin/ctx"])
    assert points_at("anything", [])  # no installation named: every ctx entry


def test_removes_what_points_at_the_installation_and_leaves_the_rest(tmp_path: Path) -> None:
    home, install = tmp_path / "home", tmp_path / "My Apps" / "ctx"
    home.mkdir()
    install.mkdir(parents=True)
    _setup(home, install)
    settings, claude_json = home / ".claude" / "settings.json", home / ".claude.json"
    codex, autostart = home / ".codex" / "config.toml", home / ".config" / "autostart" / "ctx.desktop"
    assert ac.HOOK_MARK in settings.read_text() and autostart.exists()
    before = {p: p.read_text() for p in (settings, claude_json, codex, autostart)}

    dry = _ctx("uninstall-integrations", "--installed-at", str(install), "--dry-run", home=home)
    assert dry.returncode == 0, dry.stderr
    assert "would remove the claude SessionStart hook" in dry.stdout
    assert {p: p.read_text() for p in before} == before  # a dry run changes nothing

    report = tmp_path / "report.txt"
    run = _ctx("uninstall-integrations", "--installed-at", str(install), "--report", str(report),
               home=home)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert f"removed the login item {autostart}" in out
    assert f"removed the claude SessionStart hook from {settings}" in out
    assert f"removed the claude MCP server from {claude_json}" in out
    assert f"left the codex MCP server in {codex}: it runs another ctx" in out
    assert "your data is kept in" not in out  # there is no store to keep here
    assert report.read_text().splitlines() == [ln.removeprefix("ctx: ")
                                               for ln in out.splitlines()]
    assert not autostart.exists()
    # ctx made both files in this fresh home and nothing else is in them: they go
    assert not settings.exists() and not claude_json.exists()
    assert "and the file: ctx had made it and nothing else is in it" in out
    assert codex.read_text() == before[codex]
    # the copies ctx kept while editing go too (they hold the entries just removed)
    assert not list(home.rglob("*.ctx-backup"))
    again = _ctx("uninstall-integrations", "--installed-at", str(install), "--json", home=home)
    result = json.loads(again.stdout)
    assert result["ok"] and not any(line.startswith("removed") for line in result["report"])


def test_without_an_installation_named_every_ctx_entry_goes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _setup(home, tmp_path / "app")
    run = _ctx("uninstall-integrations", home=home)
    assert run.returncode == 0, run.stderr
    assert "removed the codex MCP server" in run.stdout
    assert not (home / ".codex").exists()  # ctx made the file and its folder: both go
    assert not list(home.rglob("*.ctx-backup"))


@pytest.mark.skipif(not Path("/proc/self/exe").exists(), reason="needs /proc")
def test_stops_the_processes_of_the_installation(tmp_path: Path) -> None:
    install = tmp_path / "install"
    install.mkdir()
    sleeper = install / "ctx"  # a program run from the installation folder
    shutil.copy(shutil.which("sleep") or "/bin/sleep", sleeper)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(sleeper, other / "ctx")
    mine = subprocess.Popen([str(sleeper), "300"])
    theirs = subprocess.Popen([str(other / "ctx"), "300"])
    try:
        time.sleep(0.2)
        run = _ctx("uninstall-integrations", "--installed-at", str(install), home=tmp_path)
        assert run.returncode == 0, run.stderr
        assert mine.wait(timeout=30) is not None
        assert f"stopped ctx process {mine.pid} ({sleeper})" in run.stdout
        assert theirs.poll() is None  # another installation's process runs on
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()


@pytest.mark.timeout(300)
def test_stops_a_running_ctx_serve_first(tmp_path: Path) -> None:
    from ipc.discovery import find_live

    data_dir = Path(os.environ["CTX_HOME"])
    assert _ctx("init", "--no-keychain", home=tmp_path).returncode == 0
    server = subprocess.Popen([sys.executable, "-m", "ipc.cli.main", "serve"], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while find_live(data_dir) is None:
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "ctx serve not ready"
            time.sleep(0.1)
        run = _ctx("uninstall-integrations", home=tmp_path)
        assert run.returncode == 0, run.stderr
        assert server.wait(timeout=60) == 0
        assert f"stopped the ctx engine serving {data_dir} (pid {server.pid})" in run.stdout
        assert f"your data is kept in {data_dir}" in run.stdout
        out, _ = server.communicate(timeout=30)
        # `ctx serve` said where it served and how to stop it, once, when ready
        ready = [ln for ln in out.splitlines() if ln.startswith("ctx: serving")]
        assert len(ready) == 1 and str(data_dir) in ready[0] and f"kill {server.pid}" in ready[0]
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def test_all_users_needs_root(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("runs as root here: --all-users would act on this machine's accounts")
    run = _ctx("uninstall-integrations", "--all-users", home=tmp_path)
    assert run.returncode == 2 and "needs root" in run.stdout


def test_files_ctx_made_go_when_nothing_else_is_in_them(tmp_path: Path) -> None:
    """A fresh home: `ctx hook install` makes ~/.claude/settings.json, ~/.claude.json and
    ~/.codex/config.toml; uninstalling leaves none of them (not `{}`, not an empty TOML),
    no backups, and no ~/.codex or ~/.claude folder it made."""
    home = tmp_path / "home"
    home.mkdir()
    assert _ctx("hook", "install", "--home", str(home), home=home).returncode == 0
    made = [home / ".claude" / "settings.json", home / ".claude.json",
            home / ".codex" / "config.toml"]
    assert all(p.exists() for p in made)
    run = _ctx("hook", "uninstall", "--home", str(home), home=home)
    assert run.returncode == 0, run.stderr
    assert "ctx made it, and nothing else is in it" in run.stdout
    assert sorted(p.name for p in home.iterdir()) == []
    again = _ctx("hook", "uninstall", "--home", str(home), home=home)
    assert again.returncode == 0, again.stderr
    # nothing was there to take out: never 'removed', never 'up to date' in a file that
    # is not there
    assert "removed" not in again.stdout and "up to date" not in again.stdout, again.stdout
    assert again.stdout.count("nothing to remove") == 3, again.stdout
    assert sorted(p.name for p in home.iterdir()) == []


def test_the_users_own_files_stay_even_when_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".codex").mkdir()
    (home / ".claude" / "settings.json").write_text("{}\n")
    (home / ".codex" / "config.toml").write_text("")
    (home / ".claude.json").write_text('{"numStartups": 3}\n')
    _setup(home, tmp_path / "app")
    run = _ctx("uninstall-integrations", home=home)
    assert run.returncode == 0, run.stderr
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {}
    assert (home / ".codex" / "config.toml").read_text().strip() == ""
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 3}
    assert not list(home.rglob("*.ctx-backup"))


def test_dry_run_labels_an_existing_file_as_it_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    run = _ctx("hook", "install", "claude", "--dry-run", "--home", str(home), home=home)
    assert run.returncode == 0, run.stderr
    settings = home / ".claude" / "settings.json"
    assert f"--- {settings} (now)" in run.stdout and f"+++ {settings} (after)" in run.stdout
    assert f"{settings} (new)" not in run.stdout
    assert f"--- {home / '.claude.json'} (no such file yet)" in run.stdout


def test_all_users_acts_only_for_accounts_with_ctx_state(tmp_path: Path) -> None:
    """The .deb's prerm runs `--all-users`: an account that never ran ctx is not touched
    (no runtime folder made for it, nothing run as it)."""
    from ipc.cli.uninstall_cmd import has_ctx_state

    home = tmp_path / "never"
    home.mkdir()
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    assert not has_ctx_state(home, runtime=tmp_path / "run")
    for rel in (".local/share/ctx", ".config/ctx"):
        used = tmp_path / rel.replace("/", "_")
        (used / rel).mkdir(parents=True)
        assert has_ctx_state(used)
    hooked = tmp_path / "hooked"
    hooked.mkdir()
    ac.install(("claude",), home=hooked, cmd=["/opt/ctx/ctx"])
    assert has_ctx_state(hooked)
    (tmp_path / "run" / "ctx").mkdir(parents=True)
    assert has_ctx_state(home, runtime=tmp_path / "run")
