"""Health panel against a real host: counts, model, backend, IPC, latency, alerts, audit."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Status, VectorMemory
from tests.desktop.cells import cell
from tests.desktop.panels.conftest import ingest

pytestmark = pytest.mark.gui


@pytest.fixture
def served_host(qtbot: Any) -> Iterator[Any]:
    from desktop.host import EngineHost

    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=True)
    with qtbot.waitSignal(host.ready, timeout=60_000):
        host.start()
    yield host
    host.shutdown(wait=True)


def _refreshed(qtbot: Any, panel: Any) -> None:
    before = panel.data
    panel.refresh()
    qtbot.waitUntil(lambda: panel.data is not before and not panel._busy, timeout=30_000)


def test_shows_store_model_ipc_latency_and_audit(qtbot: Any, served_host: Any,
                                                 docs: Path) -> None:
    from desktop.panels.health import HealthPanel
    from ipc.remote import RemoteEngine

    host = served_host
    panel = HealthPanel(host, refresh_ms=60_000)
    qtbot.addWidget(panel)
    ingest(qtbot, host, [str(docs)])

    def sibling() -> Any:
        remote = RemoteEngine.connect(host.data_dir)
        assert remote is not None
        with remote:
            return remote.build_context("inverter", budget=200)
    with qtbot.waitSignal(host.build_finished, timeout=60_000):
        host.tasks.run(sibling)
    host.run(lambda e: e.search("batteries"))
    qtbot.waitUntil(lambda: not host.tasks.running(), timeout=30_000)
    _refreshed(qtbot, panel)
    f = panel.fields
    assert f["Sources"].text() == "3" and int(f["Chunks"].text()) >= 3
    assert f["Model"].text().startswith("fake") and f["Dimensions"].text() == "384"
    assert f["Vector backend"].text() == "On this computer (default)"
    assert f["Vector store"].text() == "Available"
    assert f["Vectors in memory"].text().startswith("Exact index, ")  # a small store, warm
    assert f["Size on disk"].text().endswith(("KB", "MB"))
    assert f["Endpoint"].text() == host.ipc_info and f["Endpoint"].text().startswith("ipc://")
    assert int(f["Requests served"].text()) >= 1
    build_row = [cell(panel.latency, 0, c).text() for c in range(6)]
    query_row = [cell(panel.latency, 1, c).text() for c in range(6)]
    assert build_row[0] == "Build context" and int(build_row[1]) >= 1
    assert build_row[2].endswith("ms") and query_row[0].startswith("Query")
    assert int(query_row[1]) >= 1
    methods = [cell(panel.audit, r, 1).text() for r in range(panel.audit.rowCount())]
    assert "Ingest" in methods and "ingest_job" not in methods  # words, not a method


def test_ingestion_failure_is_an_alert(qtbot: Any, panel_host: Any, tmp_path: Path) -> None:
    from desktop.panels.health import HealthPanel

    panel = HealthPanel(panel_host, refresh_ms=60_000)
    qtbot.addWidget(panel)
    # a file that fails (malformed JSON); a skip (a binary file) raises no alert
    (tmp_path / "broken.json").write_text('{"tide": [1, 2')
    with qtbot.waitSignal(panel_host.alert, timeout=60_000):
        ingest(qtbot, panel_host, [str(tmp_path / "broken.json")])
    _refreshed(qtbot, panel)
    lines = [panel.alert_list.item(i).text() for i in range(panel.alert_list.count())]
    assert any("could not be ingested" in line for line in lines)
    assert any(line.startswith("Ingestion failed, ongoing since") for line in lines)


def test_vector_store_unavailable_is_shown(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop.host import EngineHost
    from desktop.panels.health import HealthPanel

    monkeypatch.setenv("CTX_CHROMA_URL", "http://127.0.0.1:9")  # nothing listens there
    host = EngineHost(Path(os.environ["CTX_HOME"]), serve=False)
    panel = HealthPanel(host, refresh_ms=60_000)
    qtbot.addWidget(panel)
    try:
        with qtbot.waitSignal(host.failed, timeout=60_000):
            host.start()
        qtbot.waitUntil(lambda: host.state == "error", timeout=30_000)
        lines = [panel.alert_list.item(i).text() for i in range(panel.alert_list.count())]
        assert lines[0].startswith("Opening the store failed: the vector store")
        assert "vector_store_unavailable" not in lines[0]  # words, not the code
    finally:
        host.shutdown(wait=True)


def _status(**fields: Any) -> Status:
    """A Status with the model fields given (the rest as a fresh store has them)."""
    base = Status(data_dir="/d", sources=0, chunks=0, tokens=0, bytes=0, vectors=0,
                  vector_backend="embedded", vector_store_ok=True,
                  vectors_in_memory=VectorMemory("none", "empty", 0, 0), model="m", dim=8,
                  model_loaded=True, model_backend=None, model_document_precision="float32",
                  model_query_precision="float32", jobs_active=False, ingestion_paused=False,
                  store_bytes=0, alerts={})
    return dataclasses.replace(base, **fields)


def test_the_model_row_says_which_texts_the_int8_model_embeds() -> None:
    from desktop.panels.health import model_loaded_label

    assert model_loaded_label(_status(model_loaded=False)) == "loading…"
    assert model_loaded_label(_status(model_loaded=True)) == "yes"
    assert model_loaded_label(_status(model_backend="onnx")) == "yes (onnx)"
    assert model_loaded_label(_status(model_backend="onnx", model_document_precision="int8")) \
        == "yes (onnx, int8 documents)"
    assert model_loaded_label(_status(model_backend="onnx", model_document_precision="int8",
                                      model_query_precision="int8")) == \
        "yes (onnx, int8 documents and queries)"


def test_the_vectors_row_says_how_many_chunks_wait_for_theirs() -> None:
    from desktop.panels.health import vectors_label

    assert vectors_label(_status(vectors=265, chunks=265)) == "265"
    assert vectors_label(_status(vectors=137, chunks=265, sources_waiting=21,
                                 chunks_waiting=128)) == "137 (128 chunks wait for theirs)"
    assert vectors_label(_status(vectors=9, chunks=10, sources_waiting=1,
                                 chunks_waiting=1)) == "9 (1 chunk waits for its vector)"


def test_vectors_in_memory_reads_as_a_sentence() -> None:
    from ipc.status_text import memory_line

    mb = 2**20
    assert memory_line(VectorMemory("cache", "ready", 99529, 76 * mb)) == \
        "vector cache, 99529 vectors, 76 MB"
    assert memory_line(VectorMemory("exact", "ready", 419, 419 * 384 * 4)) == \
        "exact index, 419 vectors, 628 KB"
    assert memory_line(VectorMemory("cache", "loading", 0, 0)).startswith(
        "vector cache loading")
    assert "store.vector_cache_mb" in memory_line(VectorMemory("cache", "off", 0, 0))
    assert memory_line(VectorMemory("none", "empty", 0, 0)).startswith("not loaded yet")
    assert memory_line(VectorMemory("none", "none", 0, 0)).startswith("none")


def test_memory_line_names_the_prefiltered_index() -> None:
    from ipc.status_text import memory_line

    assert memory_line(VectorMemory("prefilter", "ready", 99498, 99498 * 448 * 4)) == \
        "index with a prefilter, 99498 vectors, 170 MB"


def test_alerts_wrap_grow_and_can_be_dismissed(qtbot: Any, panel_host: Any) -> None:
    """Issue 33 (19): a long alert wraps (no sideways scroll), the box is more than three
    lines, and an alert can be dismissed; an engine alert dismissed comes back only when
    it is raised again."""
    from desktop.notices import Notice
    from desktop.panels.health import HealthPanel
    from desktop.qt import Qt
    from engine import Alert

    panel = HealthPanel(panel_host, refresh_ms=60_000)
    qtbot.addWidget(panel)
    panel.resize(1100, 720)
    panel.show()
    qtbot.waitExposed(panel)
    long = "A very long alert that says a great deal about what went wrong. " * 5
    panel.add_alert(Notice("ingest_failed", long, 1050))
    panel_host.events.active_alerts["context_engine.vault.damaged"] = Alert(
        "context_engine.vault.damaged", since=1000.0, count=1, last=1000.0)
    panel._draw_alerts()
    qtbot.wait(50)
    assert panel.alert_list.wordWrap()
    assert panel.alert_list.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert panel.alert_list.height() > 3 * panel.alert_list.fontMetrics().lineSpacing() + 20
    texts = [panel.alert_list.item(i).text() for i in range(panel.alert_list.count())]
    assert texts[0].startswith("Vault damaged, ongoing since") and long in texts[1]
    assert not panel.dismiss.isEnabled()
    panel.alert_list.setCurrentRow(1)
    assert panel.dismiss.isEnabled()
    panel.dismiss.click()
    panel.alert_list.setCurrentRow(0)
    panel.dismiss.click()
    assert panel.active_alerts() == []
    panel._draw_alerts()  # a refresh: still dismissed while it is the same alert
    assert panel.active_alerts() == []
    panel_host.events.active_alerts["context_engine.vault.damaged"] = Alert(
        "context_engine.vault.damaged", since=2000.0, count=1, last=2000.0)  # raised again
    panel._draw_alerts()
    assert panel.active_alerts()[0].startswith("Vault damaged, ongoing since")
