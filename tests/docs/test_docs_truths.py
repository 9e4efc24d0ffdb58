"""What the README and docs/ say about ctx's files and keys is what ctx does.

Issue 32 found: docs/threat-model.md put the ONNX export "under the user cache dir"
(it is in the install); the README said `ctx init` shows a recovery key while the
store `make run` made had none; the README's background-engine section did not say
that a typed passphrase costs a store open and a model load in every command; and the
README was 595 lines of lab notes. Each test below failed on that text.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import pytest

from engine.embedding.onnx_files import BUNDLE_SUBDIR, install_export_dir
from tests.agents.engines import ctx
from tests.docs.blocks import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
THREATS = (REPO / "docs" / "threat-model.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _prose(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_threat_model_puts_the_onnx_export_where_ctx_reads_it() -> None:
    """The install's data dir (and the bundle's data folder), not the user cache dir."""
    where = install_export_dir().relative_to(Path(sysconfig.get_path("data")))
    said = _prose(_section(THREATS, "Nothing leaves the machine"))
    assert f".venv/{where.as_posix()}" in said, where
    assert BUNDLE_SUBDIR.as_posix() in said
    assert "under the user cache dir" not in said
    assert "only read, last" in said  # the cache dir: a fallback, never written at run time


def test_the_readme_first_shows_what_a_newcomer_needs() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250, len(lines)
    headings = [ln[3:] for ln in lines if ln.startswith("## ")]
    order = ["First steps", "Coding agents (Claude Code, Codex)", "The desktop app",
             "The background engine", "Where your data lives", "Keys, recovery and backups",
             "Install the app"]
    assert [h for h in headings if h in order] == order, headings
    for lab_note in ("hit@5", "nDCG", "95% CI", "p50", "load 1.5", "SciFact"):
        assert lab_note not in README, f"a figure in the README: {lab_note} (docs/ holds them)"


def test_the_readme_says_what_a_typed_passphrase_costs() -> None:
    said = _prose(_section(README, "The background engine"))
    assert "passphrase you **type**" in said
    assert "loads the model in its own process" in said
    for way_out in ("ctx serve", "ctx key use-keychain", "CTX_PASSPHRASE", "CTX_KEY_FILE"):
        assert way_out in said, way_out


def test_init_shows_the_recovery_key_the_readme_promises(tmp_path: Path) -> None:
    said = _prose(_section(README, "Keys, recovery and backups"))
    assert "`ctx init` also shows a **recovery key** once" in said
    done = ctx("--data-dir", str(tmp_path / "store"), "init")
    assert done.returncode == 0, done.stderr
    shown = re.search(r"\b([A-Z0-9]{4}(?:-[A-Z0-9]{4}){8})\b", done.stdout)
    assert shown is not None, done.stdout
    status = ctx("--local", "--data-dir", str(tmp_path / "store"), "status")
    assert "with recovery key" in status.stdout, status.stdout


def test_the_readme_names_the_key_file_ctx_finds_by_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.paths import default_key_file

    said = _prose(_section(README, "First steps"))
    assert "`~/.config/ctx/keyfile`" in said and "ctx finds it there by itself" in said
    if sys.platform == "linux":
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        assert default_key_file() == tmp_path / ".config" / "ctx" / "keyfile"
    script = (REPO / "scripts" / "run-main.sh").read_text(encoding="utf-8")
    assert "default_key_file()" in script  # make run writes the file where ctx looks
