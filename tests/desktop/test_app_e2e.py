"""End to end: the real app process under Xvfb, with a real tray host (trayer) and without.

A user's paths only: the app is started as ``python -m desktop.app``, a folder
is ingested by a second launch (``--ingest``, as ``ctx app --ingest`` does), a
separate process asks for a build over ZeroMQ, and ``--quit`` ends it. The
tray icon is checked both by the app (QSystemTrayIcon says it is visible) and
by X itself (an icon window named "ctx" docked inside trayer's panel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dist.xsession import icon_docked, x_tree

pytestmark = [pytest.mark.gui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SIBLING = """
import json, sys
from ipc.remote import connect
e = connect(sys.argv[1], timeout=30)
r = e.build_context("lighthouse tides", budget=200)
print(json.dumps({"tokens": r.total_tokens, "items": len(r.items),
                  "sources": [i.source for i in r.items]}))
"""
PROBE = """
import json, sys
from ipc.remote import connect
e = connect(sys.argv[1], timeout=30)
print(json.dumps({"sources": [s.to_dict() for s in e.sources()],
                  "hits": [h.to_dict() for h in e.search("harbours and tides", k=5)]}))
"""
MISSING = [b for b in ("Xvfb", "trayer", "xwininfo") if shutil.which(b) is None]


class Display:
    """An Xvfb server on a free display number (Xvfb picks it: -displayfd)."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten",
             "tcp"], pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        with os.fdopen(read) as fh:
            number = fh.readline().strip()
        if not number:
            self.proc.kill()
            raise RuntimeError("Xvfb did not start")
        self.name = f":{number}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="ctxe2e-"))
    runtime.chmod(0o700)
    out = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    out.update({"PYTHONPATH": str(REPO), "XDG_RUNTIME_DIR": str(runtime),
                "CTX_RUNTIME_DIR": str(runtime), "CTX_EMBEDDER": "fake",
                "CTX_PASSPHRASE": "an e2e passphrase", "CTX__KEYS__SCRYPT_N": "1024"})
    yield out
    shutil.rmtree(runtime, ignore_errors=True)


def app_cmd(data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "desktop.app", "--data-dir", str(data_dir), *extra]


def status(data_dir: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(app_cmd(data_dir, "--status"), check=False, env=env, capture_output=True,
                          text=True, timeout=60)
    return json.loads(done.stdout) if done.stdout.strip() else {"ok": False}


def wait_status(data_dir: Path, env: dict[str, str], proc: subprocess.Popen[str], pred: Any,
                timeout: float = 180.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the app exited early ({proc.returncode})"
        last = status(data_dir, env)
        if last.get("ok") and pred(last):
            return last
        time.sleep(0.5)
    raise AssertionError(f"app status never matched; last: {last}")


@pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (apt: xvfb trayer "
                                          "x11-utils)")
@pytest.mark.parametrize("with_tray", [True, False], ids=["trayer", "no-tray-host"])
def test_real_app_under_xvfb(with_tray: bool, env: dict[str, str], tmp_path: Path) -> None:
    display = Display()
    env["DISPLAY"] = display.name
    procs: list[subprocess.Popen[Any]] = []
    data_dir = tmp_path / "data"
    try:
        if with_tray:
            procs.append(subprocess.Popen(
                ["trayer", "--edge", "top", "--align", "right", "--width", "10", "--height",
                 "24"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            deadline = time.monotonic() + 30
            while '("panel" "trayer")' not in x_tree(display.name):
                assert time.monotonic() < deadline, "trayer did not start"
                time.sleep(0.2)
        with (tmp_path / "app.log").open("w") as log:
            app = subprocess.Popen(app_cmd(data_dir), env=env, stdout=log, stderr=log, text=True)
        procs.append(app)
        ready = wait_status(data_dir, env, app, lambda s: s["state"] == "ready")
        if with_tray:
            assert ready["tray"] == {**ready["tray"], "available": True, "used": True,
                                     "visible": True}
            assert ready["window"]["visible"] is False
            deadline = time.monotonic() + 30
            while not icon_docked(x_tree(display.name)):
                assert time.monotonic() < deadline, "no ctx icon inside trayer's panel"
                time.sleep(0.2)
        else:
            assert ready["tray"]["available"] is False and ready["tray"]["used"] is False
            assert ready["window"]["visible"] is True
            assert not icon_docked(x_tree(display.name))
        assert ready["ipc"]

        folder = tmp_path / "notes"
        folder.mkdir()
        for i in range(3):
            (folder / f"note{i}.md").write_text(f"# Note {i}\n\nThe lighthouse keeper {i} "
                                                "logs the tides every evening.\n" * 4)
        second = subprocess.run(app_cmd(data_dir, "--ingest", str(folder)), check=False,
                                env=env,
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["ok"] is True
        after = wait_status(data_dir, env, app, lambda s: s["jobs"]["done"] >= 1
                            and not s["jobs"]["active"])
        assert after["jobs"]["chunks"] >= 3

        sibling = subprocess.run([sys.executable, "-c", SIBLING, str(data_dir)], check=False,
                                 env=env, capture_output=True, text=True, timeout=120)
        assert sibling.returncode == 0, sibling.stderr
        built = json.loads(sibling.stdout)
        assert 0 < built["tokens"] <= 200 and built["items"] >= 1
        assert any(s.startswith(str(folder)) for s in built["sources"])
        assert status(data_dir, env)["server"]["requests_served"] >= 1

        conn_files = list(Path(env["CTX_RUNTIME_DIR"]).rglob("ctx-*.json"))
        assert len(conn_files) == 1
        quit_ = subprocess.run(app_cmd(data_dir, "--quit"), check=False, env=env, capture_output=True,
                               text=True, timeout=60)
        assert quit_.returncode == 0
        assert app.wait(120) == 0
        assert not any(f.exists() for f in conn_files)
        text = (tmp_path / "app.log").read_text()
        assert ("tray shown" if with_tray else "window shown") in text
        assert "state stopped" in text and "exit 0" in text
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        display.close()


def test_kill_9_loses_nothing_and_a_relaunch_works(env: dict[str, str], tmp_path: Path) -> None:
    """kill -9 in the middle of an ingestion: the next launch takes over the stale
    single-instance socket and connection file, opens the store, and every source
    stored before the kill is whole and searchable."""
    env = {**env, "QT_QPA_PLATFORM": "offscreen"}  # window mode; no display needed
    data_dir = tmp_path / "data"
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(150):
        (folder / f"doc{i:03d}.md").write_text(f"# Doc {i}\n\n" + f"Paragraph {i} about "
                                               "harbours and tides. " * 120)
    app = subprocess.Popen(app_cmd(data_dir, "--ingest", str(folder)), env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_status(data_dir, env, app, lambda s: s["jobs"]["total"] >= 1 and
                    s["jobs"]["chunks"] > 0)
        app.kill()  # SIGKILL: no cleanup at all
        app.wait(30)
        again = subprocess.Popen(app_cmd(data_dir), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            wait_status(data_dir, env, again, lambda s: s["state"] == "ready")
            probe = subprocess.run([sys.executable, "-c", PROBE, str(data_dir)], check=False,
                                   env=env, capture_output=True, text=True, timeout=120)
            assert probe.returncode == 0, probe.stderr
            seen = json.loads(probe.stdout)
            stored = seen["sources"]
            assert stored, "sources stored before the kill are kept"
            assert all(s["n_chunks"] > 0 for s in stored)  # none half-written
            assert seen["hits"] and {h["source_id"] for h in seen["hits"]} <= {
                s["id"] for s in stored}
            quit_ = subprocess.run(app_cmd(data_dir, "--quit"), check=False, env=env,
                                   capture_output=True, text=True, timeout=60)
            assert quit_.returncode == 0
            assert again.wait(120) == 0
        finally:
            if again.poll() is None:
                again.kill()
    finally:
        if app.poll() is None:
            app.kill()
