"""docs/wire.md stays true: its examples verify and its tables cover every method and error."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import ipc.errors
from engine.api import (
    TIERS,
    AuditEntry,
    Histogram,
    JobSnapshot,
    MetricsSnapshot,
    Payload,
    PayloadItem,
    RecallHit,
    RecallResult,
    SearchHit,
    SourceInfo,
    Status,
    SyncResult,
)
from engine.types import CHUNK_KINDS, LIVE_KINDS
from ipc.connection import ConnectionInfo, write_connection_file
from ipc.session import Session
from ipc.wire import DELIMITER, METHODS, IpcConfig
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


# -- result objects, as engine/api/ makes them -------------------------------------------


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


# -- what issue 32 found missing: every result table, job kind, place and error ----------


@pytest.mark.parametrize(("header", "cls"), [
    ("| source field |", SourceInfo), ("| metrics field |", MetricsSnapshot),
    ("| audit record field |", AuditEntry), ("| sync summary field |", SyncResult),
])
def test_every_result_object_has_its_table(doc: str, header: str, cls: type) -> None:
    assert set(_table(doc, header)) == _fields(cls)


def test_a_histogram_is_described_field_by_field(doc: str) -> None:
    described = re.search(r"\{([a-z0-9_, ]+)\}", _table(doc, "| metrics field |")["histograms"][-1])
    assert described is not None
    assert {n.strip() for n in described.group(1).split(",")} == _fields(Histogram)


def _job_kinds_made_by_the_engine() -> set[str]:
    kinds: set[str] = set()
    for path in (REPO / "engine").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        kinds |= set(re.findall(r"(?:\.submit|\._tracked|\.track)\(\s*\"([a-z_]+)\"", text))
    return kinds


def test_every_job_kind_is_documented(doc: str) -> None:
    made = _job_kinds_made_by_the_engine()
    assert {"paths", "text", "sync", "backup", "verify_backup"} <= made  # the scan works
    documented = set(re.findall(r"`([a-z_]+)`", _table(doc, "| job field |")["kind"][-1]))
    assert made <= documented, sorted(made - documented)


def test_recall_with_nothing_asked_is_documented(doc: str, tmp_path: Path) -> None:
    from engine import ContextEngine, InvalidInput

    with ContextEngine.open(tmp_path / "store") as engine, \
            pytest.raises(InvalidInput) as err:
        engine.recall()
    assert err.value.code == 1002 and err.value.details.get("field") == "recall.query"
    methods = section(doc, "Methods")
    assert re.search(r"A `recall`\s+call must ask for something: a `query`, `auto`, `index` "
                     r"or\s+`sync`; with none of\s+them it is `invalid_input` \(1002\)", methods)


def _error_rows(doc: str) -> dict[str, set[str]]:
    """method -> error names, from the table of backup, verify_backup and export errors."""
    out: dict[str, set[str]] = {}
    for cells in table_rows(section(doc, "Methods"), "| method | error | when |"):
        for method in re.findall(r"`([a-z_]+)`", cells[0]):
            out.setdefault(method, set()).update(re.findall(r"`([a-z_]+)`", cells[1])[:1])
    return out


def test_backup_verify_and_export_errors_are_documented(doc: str, tmp_path: Path) -> None:
    """The errors a real engine gives for what a caller gets wrong are in the table."""
    from engine import ContextEngine, CtxError

    rows = _error_rows(doc)
    junk = tmp_path / "junk.ctxbackup"
    junk.write_bytes(b"not a backup at all" * 100)
    (tmp_path / "taken.jsonl").write_text("{}\n")
    calls = [("backup", lambda e: e.backup(str(tmp_path / "no such folder" / "b"))),
             ("backup", lambda e: e.backup(str(e.data_dir / "inside.ctxbackup"))),
             ("verify_backup", lambda e: e.verify_backup(str(tmp_path / "missing"))),
             ("verify_backup", lambda e: e.verify_backup(str(junk))),
             ("export", lambda e: e.export(str(tmp_path / "taken.jsonl"))),
             ("export", lambda e: e.export(str(tmp_path / "no such folder" / "x.jsonl"))),
             ("export", lambda e: e.export(str(tmp_path / "x"), fmt="pdf"))]
    with ContextEngine.open(tmp_path / "store") as engine:
        for method, call in calls:
            with pytest.raises(CtxError) as err:
                call(engine)
            assert err.value.name in rows.get(method, set()), (method, err.value.name)


def test_section_1_names_every_place_a_connection_file_can_be(
        doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without XDG_RUNTIME_DIR (su, cron) and /run/user/UID, the file is in
    $TMPDIR/runtime-UID/ctx: the place a client written from the doc must look."""
    from ipc.connection import connection_file_path

    first = section(doc, "Finding the server")
    for place in ("$CTX_RUNTIME_DIR", "$XDG_RUNTIME_DIR/ctx", "/run/user/<uid>/ctx",
                  "<tmp>/runtime-<uid>/ctx", "$TMPDIR", "/tmp/runtime-<uid>/ctx",
                  "~/Library/Caches/TemporaryItems/ctx", "%LOCALAPPDATA%\\Temp\\ctx",
                  "the data dir itself"):
        assert place in first, place
    if sys.platform != "linux" or Path(f"/run/user/{os.getuid()}").is_dir():
        return  # the fallback below is what a Linux session without /run/user/UID gets
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    store = tmp_path / "store"
    assert connection_file_path(store).parent == tmp_path / f"runtime-{os.getuid()}" / "ctx"


def test_an_unusable_temp_runtime_dir_means_the_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$TMPDIR/runtime-UID taken by something else (a file, another user's folder): the
    connection file goes into the data dir, as section 1 says; before, platformdirs'
    PermissionError stopped every ctx command with a traceback."""
    from ipc.connection import candidate_paths, connection_file_path

    if sys.platform != "linux" or Path(f"/run/user/{os.getuid()}").is_dir():
        pytest.skip("only a Linux session without /run/user/UID uses $TMPDIR/runtime-UID")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("CTX_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    (tmp_path / f"runtime-{os.getuid()}").write_text("not a folder")
    store = tmp_path / "store"
    assert connection_file_path(store).parent == store.resolve()
    assert candidate_paths(store) == [connection_file_path(store)]
