"""The README's first command, headless: `scripts/run-main.sh` as `make run` runs it.

A new user on a machine without a display: fresh HOME, no keychain, no passphrase,
no CTX_* settings, the real model. The script must set up a key, print the sample
answer, serve until Ctrl-C, then exit 0 leaving no ctx process and the store free,
and say what to try next; a second run in a row must do the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "run-main.sh"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CTX_", "CTX__", "XDG_")) and k not in ("DISPLAY",
                                                                      "WAYLAND_DISPLAY")}
    env.update(HOME=str(home), VENV=sys.prefix, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONFAULTHANDLER="1")  # a SIGABRT prints every thread's stack (_stuck)
    env["PYTHONPATH"] = str(REPO)  # this checkout's code, whichever venv runs it
    return env


def _run_until_serving(home: Path, timeout: float = 240.0) -> tuple[int, str]:
    """Start the script in its own session, wait for it to serve, then Ctrl-C it."""
    # (no core file from the SIGABRT of _stuck: the stacks are printed instead)
    proc = subprocess.Popen(["bash", "-c", 'ulimit -c 0; exec bash "$0"', str(SCRIPT)],
                            cwd=REPO, env=_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if "serving over ZeroMQ" in line:
            break
        assert time.monotonic() < deadline, "".join(out)
    else:
        pytest.fail("the script ended before serving:\n" + "".join(out))
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    try:
        rest, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say what it printed and where it hung, and leave
        stuck = _stuck(proc.pid)          # nothing running
        os.killpg(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate()
        pytest.fail("the script did not stop within 120 s of Ctrl-C:\n" + "".join(out) + rest
                    + "\n" + stuck)
    return proc.returncode, "".join(out) + rest


def _stuck(group: int) -> str:
    """The processes of the script's group still running, and each Python one's stacks
    (a SIGABRT under PYTHONFAULTHANDLER prints every thread's to the script's output,
    read after the kill): what a stop that hangs was waiting for."""
    rows = subprocess.run(["ps", "-e", "-o", "pid=,pgid=,stat=,etime=,args="], check=False,
                          capture_output=True, text=True).stdout.splitlines()
    left = [r for r in rows if len(r.split()) > 1 and r.split()[1] == str(group)]
    for row in left:
        if "python" in row.split(None, 4)[-1].split()[0]:  # a Python process (ctx serve...)
            try:
                os.kill(int(row.split()[0]), signal.SIGABRT)
            except ProcessLookupError:
                pass
    time.sleep(3)
    return "processes left in its group:\n" + "\n".join(left)


def _store_free(home: Path) -> bool:
    from engine.paths import lock_path
    from engine.store.vault.lock import DataDirLock

    lock = DataDirLock(lock_path(home / ".local" / "share" / "ctx"))
    try:
        lock.acquire()
    except Exception:  # noqa: BLE001 - held by a process still running
        return False
    lock.release()
    return True


def test_make_run_headless_twice_in_a_row(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for attempt in (1, 2):
        rc, out = _run_until_serving(home)
        assert rc == 0, f"run {attempt} exited {rc}:\n{out}"
        assert "store_locked" not in out and "Traceback" not in out, out
        assert "total_tokens" in out or "tokens" in out
        assert "build_context" in out, "the sample answer (docs about build_context) is missing"
        assert "ctx: stopped" in out and "export PATH=" in out, out
        assert _store_free(home), f"a ctx process still holds the store after run {attempt}"
    assert (home / ".config" / "ctx" / "keyfile").stat().st_mode & 0o077 == 0


def _ctx(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command as the README's next steps run it: the same HOME, nothing else set."""
    return subprocess.run([str(Path(sys.prefix) / "bin" / "ctx"), *args], cwd=REPO,
                          env=_env(home), capture_output=True, text=True, timeout=300,
                          check=False)


def _next_steps(out: str) -> list[str]:
    """The commands of the closing "To go on from a terminal" lines, as printed."""
    lines = out.split("To go on from a terminal:\n", 1)[1].splitlines()
    steps = []
    for line in lines:
        if not line.startswith("  "):
            break
        steps.append(line.strip())
    return steps


def _stop_background_engine(home: Path) -> None:
    code = ("import sys\nfrom tests.agents.engines import stop_engine\n"
            "stop_engine(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(home / ".local" / "share" / "ctx")],
                   env=_env(home), cwd=REPO, timeout=60, check=True)


def test_make_run_shows_a_recovery_key_and_its_next_steps_work(tmp_path: Path) -> None:
    """The first run makes the store with `ctx init` (its recovery key shown once), and the
    closing steps work in the same HOME: ctx finds the key file the script made, which the
    script names; a wrong key file is named by the error."""
    home = tmp_path / "home"
    home.mkdir()
    rc, out = _run_until_serving(home)
    assert rc == 0, out
    assert "Your recovery key (shown this once" in out, out
    keyfile = home / ".config" / "ctx" / "keyfile"
    assert f"ctx finds the store's key in {keyfile}" in out, out
    assert f"wrapped with the passphrase in {keyfile}" in out, out  # what ctx init said
    assert "NO recovery key" not in out, out
    steps = _next_steps(out)
    assert any(s.startswith("ctx search") for s in steps), steps
    (home / "notes").mkdir()  # the user's own folder, which a step ingests
    (home / "notes" / "plans.md").write_text("# Plans\n\nShip the retry fix on Friday.\n")
    try:
        # every step as printed, in one shell of the same HOME; `ctx serve` would not return
        script = "set -euo pipefail\n" + "\n".join(
            s for s in steps if not s.startswith("ctx serve"))
        env = _env(home)
        env["PATH"] = os.defpath  # the steps' own `export PATH=...` must find ctx
        done = subprocess.run(["bash", "-c", script], cwd=home, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, (script, done.stdout, done.stderr)
        assert "Retries: three tries" in done.stdout, done.stdout  # search and build found it
        status = _ctx(home, "status")
        assert status.returncode == 0 and "with recovery key" in status.stdout, status
    finally:
        _stop_background_engine(home)
    good = keyfile.read_text()
    keyfile.write_text("not the passphrase\n")
    try:
        wrong = _ctx(home, "--local", "status")
        assert wrong.returncode == 4 and "wrong_key" in wrong.stderr, wrong
        assert str(keyfile) in wrong.stderr, wrong.stderr
    finally:
        keyfile.write_text(good)
