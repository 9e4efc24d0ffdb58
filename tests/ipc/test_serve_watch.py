"""`ctx serve` watches the config's [ingest] watched_folders (the engine's own watching,
tests/engine/flows/ingest/test_watching.py): a file written there is ingested."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ipc.connection import ConnectionInfo
from ipc.remote import RemoteEngine
from ipc.serve import serve
from tests.ipc.conftest import wait_for


def test_ctx_serve_watches_the_configured_folders(data_dir: Path, tmp_path: Path) -> None:
    notes = tmp_path / "served"
    notes.mkdir()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(f'[ingest]\nwatched_folders = ["{notes}"]\n')
    ready: list[ConnectionInfo] = []
    thread = threading.Thread(target=serve, args=(data_dir,), kwargs={"ready": ready.append},
                              daemon=True)
    thread.start()
    wait_for(lambda: ready, timeout=60)
    with RemoteEngine(ready[0], timeout=20) as remote:
        try:
            (notes / "tide.md").write_text("# Tides\n\nSpring tides follow the new moon.\n")
            deadline = time.monotonic() + 30
            while not any(s.uri.endswith("tide.md") for s in remote.sources()):
                assert time.monotonic() < deadline, "the served engine never ingested it"
                time.sleep(0.2)
        finally:
            remote.shutdown()
    thread.join(30)
    assert not thread.is_alive()
