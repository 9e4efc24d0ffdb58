"""docs/wire.md stays true: its examples verify and its tables cover every method and error."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ipc.errors
from engine.api import (
    TIERS,
    JobSnapshot,
    Payload,
    PayloadItem,
    RecallHit,
    RecallResult,
    SearchHit,
    Status,
    SyncResult,
)
from engine.types import CHUNK_KINDS, LIVE_KINDS
from ipc.connection import ConnectionInfo, write_connection_file
from ipc.protocol import DELIMITER, METHODS, IpcConfig
from ipc.session import Session
from tests.ipc.processes import REPO
from tests.ipc.wire_doc_tables import limit_rows, section, table_rows

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


# -- result objects, as engine/api.py makes them -------------------------------------------


def _names(cell: str) -> list[str]:
    """The field names a table row's first cell lists (`a`, `b`)."""
    return re.findall(r"`([a-z_]+)`", cell)


def _table(doc: str, header: str) -> dict[str, list[str]]:
    """field -> the rest of its row's cells, for the result table starting with ``header``."""
    rows = table_rows(section(doc, "Methods"), header)
    return {name: cells[1:] for cells in rows for name in _names(cells[0])}


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("header", "cls"), [
    ("| job field |", JobSnapshot), ("| status field |", Status),
    ("| payload field |", Payload), ("| payload item field |", PayloadItem),
    ("| hit field |", SearchHit), ("| recall field |", RecallResult),
])
def test_result_tables_name_every_field(doc: str, header: str, cls: type) -> None:
    assert set(_table(doc, header)) == _fields(cls)


def test_recall_hits_and_syncs_are_described_field_by_field(doc: str) -> None:
    table = _table(doc, "| recall field |")
    extra = _fields(RecallHit) - _fields(SearchHit)
    assert extra == {"line", "excerpt", "chunks"}
    assert all(f"`{name}`" in table["hits"][-1] for name in extra)
    described = re.search(r"\{([a-z_, ]+)\}", table["indexed"][-1])
    assert described is not None
    assert {n.strip() for n in described.group(1).split(",")} == _fields(SyncResult)


def test_payload_item_kinds_and_tiers_are_the_engines(doc: str) -> None:
    table = _table(doc, "| payload item field |")
    kinds = {k for k in re.findall(r"`([a-z_:]+)`", table["kind"][-1])}
    assert kinds == ({*CHUNK_KINDS, "conversation"} | {f"live:{k}" for k in LIVE_KINDS})
    assert set(re.findall(r"`([a-z]+)`", table["tier"][-1])) - {"surrogate"} == set(TIERS)


def test_status_table_is_what_a_server_sends(doc: str, client: Any) -> None:
    sent = set(client.call("status"))
    assert sent <= set(_table(doc, "| status field |"))
    assert "server" in sent


def test_busy_threshold_is_the_servers(doc: str) -> None:
    assert limit_rows(doc)["max_pending"] == IpcConfig().max_pending
    assert "`busy`" in doc and "`max_pending`" in doc
