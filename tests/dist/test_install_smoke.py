"""The release's smoke flow (tests/dist/test_bundle_smoke.py) on the pip install, in every
`make test`.

The bundle's smoke test runs only in the release jobs, after a build; a change that broke
its flow (the typed Payload read as a dict) was found only there, and no release could be
cut from main. This runs the same flow, through the same ``Bundle`` runner, on this
checkout's install (``.venv/bin/ctx``, the console script a pip user runs): a clean HOME,
no virtualenv on PATH, a headless key, the model from the install.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dist.bundle import REPO, Bundle
from tests.dist.test_bundle_smoke import cli_serve_and_canary

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bundle]:
    scripts = Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin")
    if not (scripts / ("ctx.exe" if os.name == "nt" else "ctx")).is_file():
        pytest.skip(f"no ctx console script in {scripts} (pip install -e .)")
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "xdg-run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    bundle = Bundle(scripts, home, runtime)
    bundle.env["PYTHONPATH"] = str(REPO)  # this checkout's code, whatever install it is in
    yield bundle


def test_cli_serve_and_canary_on_the_pip_install(install: Bundle, tmp_path: Path) -> None:
    cli_serve_and_canary(install, tmp_path, frozen=False)
