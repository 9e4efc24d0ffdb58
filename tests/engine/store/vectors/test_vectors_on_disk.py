"""What the vectors on disk give away: no chunk ids, no metadata, no vectors at all with
the memory backend, and no file in the data dir readable by group or others."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.config import Config
from engine.crypto import keys
from engine.facade import ContextEngine
from engine.store.vectors.ids import KeyedIds
from engine.store.vectors.index import ChromaVectors


@pytest.fixture(autouse=True)
def _embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the embedded Chroma store (the default keeps vectors in
    memory, tests/engine/store/vectors/test_vector_snapshot.py)."""
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")

REPO = Path(__file__).resolve().parents[4]


def _docs(tmp_path: Path, n: int) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(n):
        (docs / f"f{i:03}.md").write_text(
            f"# File {i}\n\n" + "\n\n".join(f"Section {j} of file {i} is about sailing boats "
                                             f"and the weather on day {j}." for j in range(8)))
    return docs


def test_chroma_holds_keyed_ids_in_random_order_and_no_metadata(tmp_path: Path,
                                                                 data_dir: Path) -> None:
    with ContextEngine.open(data_dir) as eng:
        eng.wait(eng.ingest(text="\n\n".join(f"Paragraph {i}: " + "words about tides " * 30
                                             for i in range(60)), title="long"))
        chunk_ids = sorted(r[0] for r in eng.rt.vault._query("SELECT id FROM chunks"))
    assert len(chunk_ids) >= 20
    con = sqlite3.connect(f"{(data_dir / 'vectors' / 'chroma.sqlite3').as_uri()}?mode=ro",
                          uri=True)
    try:
        rows = con.execute("SELECT embedding_id FROM embeddings ORDER BY seq_id").fetchall()
        meta = con.execute("SELECT count(*) FROM embedding_metadata").fetchone()[0]
    finally:
        con.close()
    stored = [r[0] for r in rows]
    assert not any(s.isdigit() for s in stored)  # no chunk id in clear
    assert meta == 0  # no kinds, times, sources or projects beside the vectors
    key = keys.unlock_key(data_dir, passphrase=os.environ["CTX_PASSPHRASE"])
    decoded = KeyedIds(key).decode(stored)
    assert sorted(decoded) == chunk_ids  # type: ignore[type-var]
    assert decoded != chunk_ids  # inserted in a random order, not in chunk order


def test_memory_backend_keeps_no_vector_on_disk(tmp_path: Path, data_dir: Path) -> None:
    cfg = Config().with_overrides({"store": {"vector_backend": "memory"},
                                   "embedding": {"model": "fake"}, "keys": {"scrypt_n": 1024}})
    docs = _docs(tmp_path, 12)
    with ContextEngine.open(data_dir, config=cfg) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        chunks = eng.status().chunks
        first = [h.chunk_id for h in eng.search("sailing boats weather day 3", k=5)]
        assert eng.status().vectors == chunks
    assert not (data_dir / "vectors").exists()
    assert sorted(p.name for p in data_dir.iterdir()) == [
        "engine.lock", "key.json", "space.reserve", "vault.db", "vectors.snap"]
    with ContextEngine.open(data_dir, config=cfg) as eng:  # rebuilt from the vault at open
        assert eng.status().vectors == chunks
        assert [h.chunk_id for h in eng.search("sailing boats weather day 3", k=5)] == first
        eng.delete(str(docs / "f000.md"))
        assert eng.status().vectors == eng.status().chunks < chunks


CHILD = textwrap.dedent("""
    import os, sys
    os.umask(0)
    from engine.facade import ContextEngine
    with ContextEngine.open(sys.argv[1]) as eng:
        eng.wait(eng.ingest(paths=[sys.argv[2]]))
        eng.search("sailing boats", k=3)
        eng.delete(sys.argv[2] + "/f001.md")
""")


def test_nothing_in_the_data_dir_is_group_or_world_readable_under_umask_0(
        tmp_path: Path, data_dir: Path) -> None:
    docs = _docs(tmp_path, 5)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(data_dir), str(docs)], cwd=REPO,
                          capture_output=True, text=True, timeout=240, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    loose = [f"{p.relative_to(data_dir)} {oct(p.lstat().st_mode & 0o777)}"
             for p in [data_dir, *data_dir.rglob("*")]
             if stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert loose == []
    assert len(list(data_dir.rglob("*"))) >= 4


def test_hnsw_path_rescores_exactly(tmp_path: Path, data_dir: Path) -> None:
    """Above ``store.exact_search_max`` Chroma's HNSW candidates are re-scored exactly:
    the same ranking as the exact index, scores as cosines, ties broken by chunk id."""
    from engine.flows.search.lanes import vector_lane
    from engine.store.vault.rows import Filters

    docs = _docs(tmp_path, 10)
    hnsw = Config().with_overrides({"store": {"exact_search_max": 0,
                                              "vector_backend": "embedded"},
                                    "embedding": {"model": "fake"}, "keys": {"scrypt_n": 1024}})
    with ContextEngine.open(data_dir, config=hnsw) as eng:
        eng.wait(eng.ingest(paths=[str(docs)]))
        ids, sims, _ = vector_lane(eng.rt, "sailing boats weather day 5", 15, Filters())
        assert isinstance(eng.rt.vectors, ChromaVectors) and eng.rt.vectors._exact is None
    exact = Config().with_overrides({"store": {"vector_backend": "embedded"},
                                     "embedding": {"model": "fake"}, "keys": {"scrypt_n": 1024}})
    with ContextEngine.open(data_dir, config=exact) as eng:
        ids2, sims2, _ = vector_lane(eng.rt, "sailing boats weather day 5", 15, Filters())
    assert ids[:5] == ids2[:5]
    assert all(abs(sims[i] - sims2[i]) < 1e-5 for i in ids[:5])
    assert [sims[i] for i in ids] == sorted((sims[i] for i in ids), reverse=True)
