"""docs/wire.md stays true: its examples verify and its tables cover every method and error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import ipc.errors
from ipc.connection import ConnectionInfo, write_connection_file
from ipc.protocol import DELIMITER, METHODS
from ipc.session import Session
from tests.ipc.processes import REPO

DOC = REPO / "docs" / "wire.md"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _examples(doc: str) -> list[dict[str, str]]:
    blocks = re.findall(r"```\n(key: .*?)```", doc, re.DOTALL)
    out = []
    for block in blocks:
        fields = dict(re.findall(r"^(\w+):\s+(.*)$", block, re.MULTILINE))
        out.append(fields)
    return out


def test_example_signatures_verify(doc: str) -> None:
    examples = _examples(doc)
    assert len(examples) == 2
    for ex in examples:
        assert bytes.fromhex(ex["delimiter"]) == DELIMITER
        session = Session(ex["key"].encode())
        assert session.sign(ex["header"].encode(), ex["body"].encode()).decode() == \
            ex["signature"]


def test_example_hex_matches_the_json(doc: str) -> None:
    request = _examples(doc)[0]
    hex_block = re.search(r"in hex \(127 and 24 bytes\):\n\n```\n(.*?)```", doc, re.DOTALL)
    assert hex_block is not None
    header_hex, body_hex = hex_block.group(1).strip().split("\n\n")
    assert bytes.fromhex(header_hex.replace("\n", " ")) == request["header"].encode()
    assert bytes.fromhex(body_hex) == request["body"].encode()


def test_tables_cover_every_method_and_error(doc: str) -> None:
    for method in METHODS:
        assert f"| `{method}` |" in doc, method
    for name in ipc.errors.__all__:
        cls = getattr(ipc.errors, name)
        assert f"| {cls.code} | `{cls.name}` |" in doc, name


def test_the_plain_pyzmq_example_runs(doc: str, info: ConnectionInfo, tmp_path: Path) -> None:
    code = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)[1]
    assert "import datetime, hashlib, hmac" in code
    conn = write_connection_file(info, tmp_path / "conn.json")
    script = tmp_path / "sibling.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script), str(conn)], check=False,
                          capture_output=True,
                          timeout=60, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo:what did we decide about caching?"
