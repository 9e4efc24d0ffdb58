"""Every shell and Python block of README.md and docs/*.md that a user would run, run.

One test per doc file: its blocks in order, in one clean sandbox (``sandbox.Sandbox``:
fresh HOME, a keychain, the real model, a real engine), sharing one store and one
engine, as a user who follows the page from the top. A block that fails fails the
test with its output; a block marked ``<!-- not-run: why -->`` is left out and listed
(``test_docs_static``). Before this test, the README's "From Python" example and
docs/wire.md section 9 crashed on the typed Payload (``payload["total_tokens"]``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.blocks import REPO, Block, doc_files, parse
from tests.docs.sandbox import Sandbox

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(os.name != "posix", reason="the blocks are POSIX shell")]


def _runnable(path: Path) -> list[Block]:
    return [b for b in parse(path)[0] if b.runnable and b.not_run is None]


FILES = [p for p in doc_files() if _runnable(p)]


def _check_export(sandbox: Sandbox) -> None:
    """What the README's export wrote is the plaintext it warned about, one source a line."""
    out = sandbox.home / "notes-export.jsonl"
    if out.exists():
        lines = out.read_text(encoding="utf-8").splitlines()
        assert lines and all(line.startswith("{") for line in lines)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_doc_blocks_run(path: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "box")
    ran: list[str] = []
    try:
        for block in _runnable(path):
            done = sandbox.run(block)
            assert done.returncode == 0, (
                f"{block.where} ({block.lang}) exited {done.returncode}\n--- block ---\n"
                f"{block.text}--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n"
                f"{done.stderr[-4000:]}")
            assert "Traceback" not in done.stderr, f"{block.where}\n{done.stderr[-4000:]}"
            ran.append(block.where)
        _check_export(sandbox)
    finally:
        sandbox.stop()
    print("ran: " + ", ".join(ran))
