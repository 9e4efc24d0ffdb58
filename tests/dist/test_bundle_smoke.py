"""Smoke test of the built app bundle (marker ``dist``; skipped when there is no bundle).

The bundled executables run outside any virtualenv with a clean HOME and a
headless key: version, init, ingest a folder, a context within budget, `ctx
serve` answering a ZeroMQ client, the tray app in a desktop session (Linux:
Xvfb with a tray host; macOS and Windows: the runner's own, where it has one);
afterwards no byte of the data dir holds the canary. ``CTX_DIST_BUNDLE`` points
it at an installed build (/opt/ctx, an installed ctx.app, the Windows install
folder) instead of dist/ctx.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.dist.bundle import (
    REPO,
    Bundle,
    files_containing,
    require_bundle,
    stop,
    wait_for,
)

pytestmark = [pytest.mark.dist, pytest.mark.timeout(900)]

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bundle]:
    root = require_bundle()
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "xdg-run"
    runtime.mkdir(mode=0o700)
    # this process's ZeroMQ client looks for connection files where the bundle writes them
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    yield Bundle(root, home, runtime)


def _corpus(folder: Path, canary: str) -> Path:
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry policy\n\nThe sync client retries three times with exponential backoff "
        f"and then gives up. Incident marker {canary}.\n", encoding="utf-8")
    (folder / "tray.md").write_text(
        "# Tray icon\n\nThe tray icon turns amber while ingestion runs and grey when the "
        "engine is locked.\n", encoding="utf-8")
    (folder / "notes.py").write_text(
        "def backoff(attempt: int) -> float:\n    \"\"\"Seconds to wait before retrying.\"\"\"\n"
        "    return 0.5 * 2 ** attempt\n", encoding="utf-8")
    return folder


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_cli_serve_and_canary(bundle: Bundle, tmp_path: Path) -> None:
    cli_serve_and_canary(bundle, tmp_path, frozen=True)


def cli_serve_and_canary(bundle: Bundle, tmp_path: Path, *, frozen: bool) -> None:
    """The release's smoke flow. ``frozen``: a PyInstaller build (the bundle's own checks
    too); tests/dist/test_install_smoke.py runs the same flow on the pip install in every
    `make test`, so a change that breaks it fails before a release job does."""
    canary = f"CANARY{uuid.uuid4().hex}"
    assert _ok(bundle.run("--version")).strip() == f"ctx {VERSION}"
    if frozen:  # the bundle's launcher (packaging/launcher.py) describes itself
        about = json.loads(_ok(bundle.run("--version", "--json")))
        assert about["frozen"] is True and about["chroma_telemetry"] == "False"
        assert about["onnx_export"].startswith(str(bundle.top))  # the model inside the bundle
        for left_out in ("torch", "grpc"):  # see packaging/ctx_platform.py EXCLUDES
            assert bundle.find(left_out) is None, left_out
        dangling = [p for p in bundle.top.rglob("*") if p.is_symlink() and not p.exists()]
        assert not dangling, dangling  # links to a dropped library (packaging/ctx.spec)

    init = bundle.run("init")  # headless: no keychain here, the key from CTX_PASSPHRASE
    _ok(init)
    assert "Traceback" not in init.stderr, init.stderr  # e.g. a keyring backend missing
    assert (bundle.data_dir / "vault.db").exists()
    docs = _corpus(tmp_path / "docs", canary)
    jobs = json.loads(_ok(bundle.run("ingest", str(docs), "--json")))["jobs"]
    assert sum(j["files_done"] for j in jobs) == 3, jobs
    assert not any(j["errors"] for j in jobs), jobs

    status = json.loads(_ok(bundle.run("status", "--json")))
    status = status.get("status", status)
    assert status["model"] == "all-MiniLM-L6-v2" and status["chunks"] >= 3
    payload = json.loads(_ok(bundle.run("build", "how often does the client retry?",
                                        "--budget", "120", "--format", "json")))
    assert 0 < payload["total_tokens"] <= 120
    assert any(item["source"].endswith("retry.md") for item in payload["items"])

    from ipc.remote import connect

    # Commands that need the model may have started a background engine (the bundle's
    # `ctx -m ipc.cli.main serve`): stop it, so that the data dir is free for `ctx serve`.
    _stop_engine(bundle)
    server = bundle.start("serve")
    try:

        remote = wait_for(lambda: connect(bundle.data_dir, timeout=5.0), 120,
                          "ctx serve's connection file")
        assert remote.ping()["pid"] == server.pid
        served = remote.build_context("what does the tray icon show?", budget=80)
        assert 0 < served.total_tokens <= 80  # a typed Payload, as the README's example reads it
        assert any(i.source.endswith("tray.md") for i in served.items)
        # the CLI finds the running server of the same data dir and goes through it
        via_cli = json.loads(_ok(bundle.run("build", "backoff seconds", "--budget", "60",
                                            "--format", "json")))
        assert via_cli["total_tokens"] <= 60
        remote.shutdown()
        remote.close()
        server.wait(timeout=60)
    finally:
        out, err = stop(server)
    assert server.returncode == 0, err
    # one line once ready: where it serves and how to stop it
    ready = [line for line in out.splitlines() if line.startswith("ctx: serving ")]
    assert len(ready) == 1 and str(bundle.data_dir) in ready[0] and "Ctrl-C" in ready[0], out
    _stop_engine(bundle)  # the CLI call above may not have found the server yet

    assert not files_containing(bundle.data_dir, canary.encode())
    assert not files_containing(bundle.runtime, canary.encode())


@contextlib.contextmanager
def _desktop_session(bundle: Bundle) -> Iterator[tuple[dict[str, str], Callable[[], bool]]]:
    """(environment, "icon docked?") of a desktop session: Xvfb with a tray host on Linux,
    the runner's own session on macOS and Windows (CTX_DIST_NATIVE_SESSION=1 says it has one).
    """
    if sys.platform.startswith("linux"):
        for tool in ("Xvfb", "trayer", "xwininfo"):
            if shutil.which(tool) is None:
                pytest.skip(f"{tool} is not installed")
        from tests.dist.xsession import XSession

        with XSession() as x:
            yield dict(bundle.env, DISPLAY=x.display), x.tray_has_icon
        return
    if os.environ.get("CTX_DIST_NATIVE_SESSION") != "1":
        pytest.skip("no desktop session here (CTX_DIST_NATIVE_SESSION=1 where there is one)")

    def docked() -> bool:
        status = _app_status(bundle, bundle.env) or {}
        tray = status.get("tray") or {}
        return bool(tray.get("used") and tray.get("visible"))
    yield dict(bundle.env), docked


def test_tray_app_in_a_desktop_session(bundle: Bundle) -> None:
    if bundle.find("PySide6") is None:
        pytest.skip("this bundle has no desktop app yet")
    canary = f"CANARY{uuid.uuid4().hex}"
    _ok(bundle.run("init"))
    with _desktop_session(bundle) as (env, docked):
        app = bundle.start(exe="ctx-app", env=env)
        try:
            status = wait_for(lambda: _app_status(bundle, env), 120, "the tray app's status")
            assert status.get("ok"), status
            assert wait_for(docked, 60, "an icon docked in the tray")
            _ok(bundle.run("ingest", "-", "--title", "note", input=f"tray note {canary}\n",
                           env=env))
            served = json.loads(_ok(bundle.run("build", "tray note", "--budget", "50",
                                               "--format", "json", env=env)))
            assert served["total_tokens"] <= 50
            _ok(bundle.run("--quit", exe="ctx-app", env=env))
            app.wait(timeout=60)
        finally:
            stop(app)
    assert app.returncode == 0
    _stop_engine(bundle)
    assert not files_containing(bundle.data_dir, canary.encode())


def _engine_running(bundle: Bundle) -> bool:
    from ipc.remote import connect

    remote = connect(bundle.data_dir, timeout=5.0)
    if remote is None:
        return False
    remote.close()
    return True


def _stop_engine(bundle: Bundle) -> None:
    from ipc.remote import connect

    remote = connect(bundle.data_dir, timeout=10.0)
    if remote is None:
        return
    try:
        remote.shutdown()
    finally:
        remote.close()
    wait_for(lambda: not _engine_running(bundle), 120, "the background engine to stop")
    time.sleep(1.0)  # its lock is released after its connection file is removed


def _app_status(bundle: Bundle, env: dict[str, str]) -> dict[str, object] | None:
    proc = bundle.run("--status", exe="ctx-app", env=env, timeout=30)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    reply = json.loads(proc.stdout)
    return reply if reply.get("ok") and reply.get("timings_ms", {}).get("ready") else None
