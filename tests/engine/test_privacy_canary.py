"""A unique canary ingested, used and deleted never appears in any byte of the data dir."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.facade import ContextEngine


def _grep_data_dir(root: Path, needles: list[bytes]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            for needle in needles:
                if needle.lower() in data:
                    found.append(f"{path.relative_to(root)}")
    return found


def _needles(canary: str) -> list[bytes]:
    return [canary.encode("utf-8"), canary.encode("utf-16-le"), canary.upper().encode("utf-8")]


@pytest.mark.integration
def test_canary_never_on_disk(tmp_path: Path, data_dir: Path, minilm: object,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    canary = "zq" + uuid.uuid4().hex[:12] + "canary"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "secret.md").write_text(f"# Private\n\nThe vault code word is {canary} today.\n")
    (docs / "other.md").write_text("# Other\n\nNothing to see in this unrelated file at all.\n")
    (docs / "other2.txt").write_text("Another unrelated file about gardening and tomatoes.\n")

    eng = ContextEngine.open(data_dir, embedder=minilm)  # type: ignore[arg-type]
    eng.wait(eng.ingest(paths=[str(docs)]))
    eng.wait(eng.ingest(text=f"a note repeating {canary}", title="note"))
    hits = eng.search(canary, k=5)
    assert any(canary in h.text for h in hits)
    payload = eng.build_context(f"what is the code word {canary}?", budget=300)
    assert canary in payload.context
    eng.status(), eng.metrics(), eng.audit(), eng.sources()
    eng.delete(str(docs / "other.md"))
    eng.close()
    assert _grep_data_dir(data_dir, _needles(canary)) == []

    eng = ContextEngine.open(data_dir, embedder=minilm)  # type: ignore[arg-type]
    eng.delete(str(docs / "secret.md"))
    eng.delete(next(s for s in eng.sources() if s["title"] == "note")["id"])
    assert all(canary not in h.text for h in eng.search(canary, k=20))
    eng.close()
    assert _grep_data_dir(data_dir, _needles(canary)) == []
