"""docs/wire.md describes the backup and export results field by field, as engine/api/
makes them, and the status fields about backups and keys."""

from __future__ import annotations

import dataclasses
import re

import pytest

from engine.api import BackupResult, ExportResult, Status
from tests.ipc.processes import REPO
from tests.ipc.wire_doc_tables import section, table_rows

DOC = (REPO / "docs" / "wire.md").read_text(encoding="utf-8")


def _table(header: str) -> set[str]:
    rows = table_rows(section(DOC, "Methods"), header)
    return {name for cells in rows for name in re.findall(r"`([a-z_]+)`", cells[0])}


@pytest.mark.parametrize(("header", "cls"), [("| backup field |", BackupResult),
                                             ("| export field |", ExportResult)])
def test_keeping_results_are_described(header: str, cls: type) -> None:
    assert _table(header) == {f.name for f in dataclasses.fields(cls)}


def test_status_tells_the_last_backup_and_the_key() -> None:
    assert {"last_backup", "key_method", "recovery_key"} <= _table("| status field |")
    assert {"last_backup", "key_method", "recovery_key"} <= \
        {f.name for f in dataclasses.fields(Status)}
