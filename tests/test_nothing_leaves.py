"""Nothing leaves the data dir: every file ctx and its libraries write at run time.

Real processes run with a fresh HOME, XDG dirs and TMPDIR inside one sandbox
folder and none of the libraries' switches set by the caller (the product must
set them itself): `ctx init`, `ctx ingest` (which starts `ctx serve` in the
background), `ctx search` through it, `ctx mcp` answering a real MCP client, and
the desktop app (offscreen) ingesting and quitting. Afterwards the sandbox may
hold only the data dir, the inputs, and the documented model cache (the ONNX
export in the user cache dir, put there before the run). onnxruntime, before
ctx turned its telemetry off, left a device id and an event queue under
``$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
# Switches a caller's environment might carry; the test runs without any of them.
LIBRARY_SWITCHES = ("ORT_DISABLE_TELEMETRY", "ANONYMIZED_TELEMETRY", "HF_HUB_OFFLINE",
                    "HF_HUB_DISABLE_TELEMETRY", "TRANSFORMERS_OFFLINE", "DO_NOT_TRACK",
                    "HF_HUB_DISABLE_IMPLICIT_TOKEN", "HF_DATASETS_OFFLINE", "OTEL_SDK_DISABLED",
                    "HF_HOME", "TOKENIZERS_PARALLELISM")


def _export() -> Path:
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.onnx_files import find_export

    found = find_export(EmbeddingConfig(model="minilm"))
    if found is None:
        pytest.skip("no ONNX export of MiniLM here (python -m engine.embedding.onnx_export)")
    return found


def _sandbox_env(box: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in LIBRARY_SWITCHES and not k.startswith(("XDG_", "CTX_"))}
    dirs = {"HOME": "home", "XDG_CACHE_HOME": "cache", "XDG_CONFIG_HOME": "config",
            "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state", "XDG_RUNTIME_DIR": "run",
            "TMPDIR": "tmp"}
    for name, sub in dirs.items():
        (box / sub).mkdir(mode=0o700)
        env[name] = str(box / sub)
    env.update({"CTX_HOME": str(box / "store"), "CTX_PASSPHRASE": "sandbox passphrase",
                "CTX__KEYS__SCRYPT_N": "1024", "CTX_EMBEDDER": "minilm",
                "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO),
                "CTX_ENGINE_IDLE_S": "120"})
    return env


def _files(box: Path) -> set[str]:
    return {str(p.relative_to(box)) for p in box.rglob("*") if not p.is_dir()}


def _run(env: dict[str, str], *args: str, timeout: float = 180) -> str:
    done = subprocess.run([sys.executable, "-m", *args], env=env, cwd=env["HOME"],
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    return done.stdout


async def _mcp_search(env: dict[str, str]) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "ipc.cli.main", "mcp"],
                                   env=env, cwd=env["HOME"])
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - a pipe sink, opened once
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("search", {"query": "lighthouse tides",
                                                      "budget": 200})


def _app_status(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "desktop.app", "--status"], env=env,
                          cwd=env["HOME"], capture_output=True, text=True, timeout=60,
                          check=False)
    return json.loads(done.stdout) if done.stdout.strip() else {"ok": False}


def _wait_app(env: dict[str, str], app: subprocess.Popen[bytes], pred: Any) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert app.poll() is None, f"the app exited early ({app.returncode})"
        last = _app_status(env)
        if last.get("ok") and pred(last):
            return
        time.sleep(0.5)
    raise AssertionError("the app never reached the state asked")


def _stop_engine(env: dict[str, str]) -> None:
    """Shut down the background engine (the sandbox's runtime dir holds its file)."""
    code = ("import sys\nfrom tests.agents.engines import stop_engine\n"
            "stop_engine(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, env["CTX_HOME"]], env=env, cwd=str(REPO),
                   timeout=60, check=True)


def test_only_the_data_dir_and_the_model_cache_are_written(tmp_path: Path) -> None:
    export = _export()
    box = tmp_path / "box"
    box.mkdir()
    env = _sandbox_env(box)
    cache = box / "cache" / "ctx" / "onnx" / export.name  # the documented model cache
    shutil.copytree(export, cache)
    docs = box / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nThe lighthouse keeper {i} logs "
                                          "the tides every evening.\n" * 4)
    before = _files(box)
    try:
        _run(env, "ipc.cli.main", "init")
        _run(env, "ipc.cli.main", "ingest", str(docs))  # starts `ctx serve` in the background
        assert "lighthouse" in _run(env, "ipc.cli.main", "search", "lighthouse keeper")
        result = anyio.run(_mcp_search, env)
        assert not result.is_error and "lighthouse" in result.content[0].text
    finally:
        _stop_engine(env)
    (docs / "later.md").write_text("# Later\n\nA note the app ingests about the harbour.\n")
    app = subprocess.Popen([sys.executable, "-m", "desktop.app", "--no-tray"], env=env,
                           cwd=env["HOME"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        _wait_app(env, app, lambda s: s["state"] == "ready")
        _run(env, "desktop.app", "--ingest", str(docs / "later.md"), timeout=60)
        _wait_app(env, app, lambda s: s["jobs"]["done"] >= 1 and not s["jobs"]["active"])
        _run(env, "desktop.app", "--quit", timeout=60)
        assert app.wait(120) == 0
    finally:
        if app.poll() is None:
            app.kill()
    new = sorted(f for f in _files(box) - before
                 if not f.startswith(("store/", "docs/")))
    assert new == [], f"written outside the data dir: {new}"
