"""`ctx hook install/uninstall`: merge into the agents' settings, never destroy them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from engine.errors import ConfigError
from ipc.cli import agent_config as ac

CMD = ["/opt/ctx/bin/ctx"]
CODEX_BEFORE = """# my codex config
model = "o4-mini"

[mcp_servers.other]
command = "other-server"   # keep me
args = ["--flag"]

[profiles.fast]
model = "gpt-4.1"
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    (h / ".codex").mkdir()
    (h / ".claude" / "settings.json").write_text(json.dumps({
        "model": "opus", "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}))
    (h / ".claude.json").write_text(json.dumps({"numStartups": 3, "mcpServers": {
        "github": {"type": "stdio", "command": "gh-mcp", "args": []}}}))
    (h / ".codex" / "config.toml").write_text(CODEX_BEFORE)
    return h


def _files(home: Path) -> dict[str, str]:
    return {p: (home / p).read_text() for p in
            (".claude/settings.json", ".claude.json", ".codex/config.toml")}


def test_install_merges_and_is_idempotent(home: Path) -> None:
    changes = ac.install(("claude", "codex"), home=home, cmd=CMD, budget=3000)
    assert all(c.changed for c in changes)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["permissions"] == {"allow": ["Bash(ls)"]}
    assert settings["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say done"}]}]
    commands = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    assert commands == ["echo mine", "/opt/ctx/bin/ctx hook session-start --budget 3000"]
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 3 and "github" in claude["mcpServers"]
    assert claude["mcpServers"]["ctx"] == {"type": "stdio", "command": "/opt/ctx/bin/ctx",
                                           "args": ["mcp"], "env": {}}
    codex_text = (home / ".codex" / "config.toml").read_text()
    codex = tomllib.loads(codex_text)
    assert codex["mcp_servers"]["ctx"] == {"command": "/opt/ctx/bin/ctx", "args": ["mcp"]}
    assert codex["mcp_servers"]["other"]["args"] == ["--flag"]
    assert codex["profiles"]["fast"]["model"] == "gpt-4.1"
    assert "# keep me" in codex_text and "# my codex config" in codex_text
    for name in ("settings.json", "../.claude.json", "../.codex/config.toml"):
        backup = (home / ".claude" / name).resolve()
        assert backup.with_name(backup.name + ".ctx-backup").exists()

    before = _files(home)
    again = ac.install(("claude", "codex"), home=home, cmd=CMD, budget=3000)
    assert not any(c.changed for c in again)
    assert _files(home) == before


def test_reinstall_with_another_path_replaces_not_duplicates(home: Path) -> None:
    ac.install(("claude", "codex"), home=home, cmd=CMD)
    ac.install(("claude", "codex"), home=home, cmd=["/usr/local/bin/ctx"])
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    ours = [h["command"] for g in settings["hooks"]["SessionStart"] for h in g["hooks"]
            if "session-start" in h["command"]]
    assert ours == ["/usr/local/bin/ctx hook session-start --budget 4000"]
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["mcp_servers"]["ctx"]["command"] == "/usr/local/bin/ctx"


def test_dry_run_writes_nothing(home: Path) -> None:
    before = _files(home)
    changes = ac.install(("claude", "codex"), home=home, cmd=CMD, dry_run=True)
    assert all(c.changed for c in changes)
    assert _files(home) == before


def test_uninstall_restores_the_users_settings(home: Path) -> None:
    original = {p: json.loads(t) if p.endswith(".json") else tomllib.loads(t)
                for p, t in _files(home).items()}
    ac.install(("claude", "codex"), home=home, cmd=CMD)
    ac.uninstall(("claude", "codex"), home=home)
    after = {p: json.loads(t) if p.endswith(".json") else tomllib.loads(t)
             for p, t in _files(home).items()}
    assert after == original


def test_fresh_home_gets_new_files(tmp_path: Path) -> None:
    home = tmp_path / "empty"
    ac.install(("claude", "codex"), home=home, cmd=CMD)
    assert json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["ctx"]


def test_unparsable_settings_are_left_alone(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text("{ not json")
    with pytest.raises(ConfigError):
        ac.install(("claude",), home=home, cmd=CMD)
    assert path.read_text() == "{ not json"
    (home / ".codex" / "config.toml").write_text("[broken")
    with pytest.raises(ConfigError):
        ac.install(("codex",), home=home, cmd=CMD)
    assert (home / ".codex" / "config.toml").read_text() == "[broken"


def test_ctx_command_is_absolute() -> None:
    cmd = ac.ctx_command("/tmp/some-store")
    assert Path(cmd[0]).is_absolute()
    assert cmd[-2:] == ["--data-dir", "/tmp/some-store"]
