"""`ctx backup`, `ctx backup --verify`, `ctx export`, `ctx status` and `ctx key rotate`
through a running engine (a real `ctx serve` process: the ipc methods), and the same with
--local once it stopped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ipc.conftest import env_for_subprocess
from tests.ipc.processes import PASSPHRASE, REPO, ServeProcess


def _ctx(runtime: Path, data_dir: Path, *args: str, stdin: str = ""
         ) -> subprocess.CompletedProcess[str]:
    env = env_for_subprocess(runtime, CTX_PASSPHRASE=PASSPHRASE, CTX_EMBEDDER="fake")
    env.pop("CTX_HOME", None)
    return subprocess.run([sys.executable, "-m", "ipc.cli.main", "--data-dir", str(data_dir),
                           *args], input=stdin, capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120, check=False)


def test_backup_verify_export_through_a_running_engine(tmp_path: Path, runtime_dir: Path
                                                       ) -> None:
    data_dir = tmp_path / "data"
    init = _ctx(runtime_dir, data_dir, "init", "--no-keychain")
    assert init.returncode == 0, init.stderr
    server = ServeProcess(data_dir, runtime_dir, tmp_path / "serve.log")
    try:
        server.wait_ready()
        for i in range(3):
            r = _ctx(runtime_dir, data_dir, "ingest", "-", "--title", f"n{i}",
                     stdin=f"note {i}: the ferry leaves at {i} past nine\n")
            assert r.returncode == 0, r.stderr
        r = _ctx(runtime_dir, data_dir, "backup", str(tmp_path), "--json")
        assert r.returncode == 0, r.stderr
        made = json.loads(r.stdout)
        assert made["sources"] == 3 and Path(made["path"]).parent == tmp_path
        assert Path(made["path"]).name.startswith("ctx-backup-")
        r = _ctx(runtime_dir, data_dir, "backup", "--verify", made["path"], "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["verified"] is True
        r = _ctx(runtime_dir, data_dir, "export", str(tmp_path / "e.jsonl"), "--yes")
        assert r.returncode == 0 and "exported 3 sources" in r.stdout, r.stderr
        r = _ctx(runtime_dir, data_dir, "status")
        assert "served: True" in r.stdout and "last backup: 20" in r.stdout
        assert "passphrase, with recovery key" in r.stdout
        r = _ctx(runtime_dir, data_dir, "key", "rotate", "--json")
        assert r.returncode == 0, r.stderr  # the running engine rotates it, as a job
        online = json.loads(r.stdout)
        assert online["job"] and online["key_id"] != online["old_key_id"]
        r = _ctx(runtime_dir, data_dir, "search", "ferry leaves", "--json")
        assert r.returncode == 0 and len(json.loads(r.stdout)["hits"]) == 3, r.stderr
        r = _ctx(runtime_dir, data_dir, "status")
        assert "served: True" in r.stdout, r.stdout  # the same engine, under the new key
        audit = _ctx(runtime_dir, data_dir, "audit", "--json")
        methods = [a["method"] for a in json.loads(audit.stdout)["audit"]]
        assert {"backup", "verify_backup", "export"} <= set(methods)
    finally:
        server.kill(15)
    r = _ctx(runtime_dir, data_dir, "--local", "backup", str(tmp_path / "local.ctxbackup"))
    assert r.returncode == 0 and "backup written" in r.stdout, r.stderr
    r = _ctx(runtime_dir, data_dir, "key", "rotate", "--json")
    assert r.returncode == 0, r.stderr
    rotated = json.loads(r.stdout)  # no engine runs: here, the store closed
    assert rotated["old_key_id"] == online["key_id"] != rotated["key_id"]
    r = _ctx(runtime_dir, data_dir, "--local", "backup", "--verify", made["path"])
    assert r.returncode == 4 and "earlier data key" in r.stderr  # taken before the rotation
    r = _ctx(runtime_dir, data_dir, "backup", "--verify", made["path"], "--recovery-key-stdin",
             stdin=_recovery_key(init.stdout) + "\n")
    assert r.returncode == 0, r.stderr  # with the recovery key of its day, it opens
    old = tmp_path / "before-rotation"  # and restores, with the passphrase of its day
    r = _ctx(runtime_dir, old, "restore", made["path"])
    assert r.returncode == 0 and "3 sources" in r.stdout, r.stderr
    r = _ctx(runtime_dir, old, "--local", "sources", "--json")
    assert r.returncode == 0 and len(json.loads(r.stdout)["sources"]) == 3, r.stderr


def _recovery_key(init_output: str) -> str:
    import re

    found = re.search(r"\b[A-Z2-7]{4}(?:-[A-Z2-7]{4}){8}\b", init_output)
    assert found is not None, init_output
    return found.group(0)


def test_a_refused_online_rotation_leaves_no_key_behind(tmp_path: Path, runtime_dir: Path,
                                                        file_keyring: Path) -> None:
    """`ctx key rotate` prepares the new key (key.json's ``pending``, a keychain entry)
    before it asks the running engine to rotate; an engine that refuses (here: the
    vectors are in Chroma, whose ids come from the key) forgets it again: key.json and
    the keychain are as they were, and a rotation with the store closed still works."""
    data_dir = tmp_path / "data"
    r = _ctx(runtime_dir, data_dir, "init")
    assert r.returncode == 0, r.stderr
    (data_dir / "config.toml").write_text('[store]\nvector_backend = "embedded"\n')
    key_before = json.loads((data_dir / "key.json").read_text())
    assert key_before["method"] == "keychain"
    keychain_before = json.loads(file_keyring.read_text())
    server = ServeProcess(data_dir, runtime_dir, tmp_path / "serve.log")
    try:
        server.wait_ready()
        r = _ctx(runtime_dir, data_dir, "key", "rotate")
        assert r.returncode != 0 and "Chroma" in r.stderr, (r.returncode, r.stderr)
        key_after = json.loads((data_dir / "key.json").read_text())
        assert key_after.get("pending") is None, key_after
        assert key_after == key_before
        assert json.loads(file_keyring.read_text()) == keychain_before
    finally:
        server.kill(15)
    r = _ctx(runtime_dir, data_dir, "key", "rotate", "--json")
    assert r.returncode == 0, r.stderr  # no engine runs: rotated with the store closed
    assert json.loads(r.stdout)["old_key_id"] == key_before["key_id"]
