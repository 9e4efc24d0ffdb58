"""bench/engine_scale.py's code path at a tiny size (no timing asserted): sessions and
documents grown through the engine with MiniLM-like vectors, cached, reopened in a child
process and measured; the backup/restore/delete run; two fresh builds hash the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import engine_scale
from bench.scale_vectors import MiniLMLike


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A stand-in for real MiniLM vectors (their covariance is all MiniLMLike reads)."""
    x = np.random.default_rng(0).standard_normal((500, 384)).astype(np.float32)
    path = tmp_path / "sample.npy"
    np.save(path, x / np.linalg.norm(x, axis=1, keepdims=True))
    return path


def test_minilm_like_vectors_do_not_depend_on_their_batch(sample: Path) -> None:
    model = MiniLMLike(np.load(sample))
    texts = [f"text {i} " * (i % 5 + 1) for i in range(9)]
    alone = np.stack([model.encode([t])[0] for t in texts])
    assert alone.tobytes() == model.encode(texts).tobytes()
    assert alone.tobytes() == model.encode(texts[::-1])[::-1].tobytes()
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-6)
    assert model.name == "all-MiniLM-L6-v2" and model.dim == 384


def test_engine_scale_builds_caches_measures_and_keeps(tmp_path: Path, sample: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_PASSPHRASE", "bench-only")
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", "1024")
    model = MiniLMLike(np.load(sample))
    store, info = engine_scale.build(tmp_path, 600, model)
    assert info is not None and (store / "READY").exists()
    assert 0 < info["session_chunks"] < info["chunks"]
    again, cached = engine_scale.build(tmp_path, 600, model)
    assert (again, cached) == (store, None)
    r = engine_scale.measure_child(store, 3, str(sample))
    assert r["chunks"] == r["vectors"] == info["chunks"]
    for call in ("build_context", "search", "recall"):
        assert set(r[call]) == {"p50", "p95", "cpu_p50", "cpu_p95"}
    assert r["rss_mb"] > 0 and r["first_answer_s"] >= r["open_s"]
    assert r["check_wait_s"] >= 0  # calls measured once the vault's page check ended
    assert r["snapshot_mb"] > 0 and r["vault_mb"] > 0
    (one,) = engine_scale.opens(store, 1, str(sample))  # --opens: open -> first answer only
    assert one["first_answer_s"] >= one["open_s"] > 0 and one["rss_mb"] > 0
    assert one["first_cpu_s"] >= one["open_cpu_s"] > 0


def test_ops_back_up_restore_and_delete_a_tenth(tmp_path: Path, sample: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_PASSPHRASE", "bench-only")
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", "1024")
    store, info = engine_scale.build(tmp_path, 1200, MiniLMLike(np.load(sample)))
    assert info is not None
    r = engine_scale.ops(store, str(sample))
    assert r["chunks"] == r["vectors"] == info["chunks"]
    assert r["delete_state"].endswith("done")
    assert 0.05 * info["chunks"] < r["deleted_chunks"] < 0.15 * info["chunks"]
    assert r["backup_mb"] > 0 and r["restore_progress_calls"] > 0
    assert not (store.parent / "ops-work").exists()  # the copies are gone


def test_two_fresh_builds_hash_the_same(tmp_path: Path, sample: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_PASSPHRASE", "bench-only")
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", "1024")
    cache = tmp_path / "cache"
    got = []
    for run in ("a", "b"):
        store, info = engine_scale.build(cache, 600, MiniLMLike(np.load(sample)))
        assert info is not None  # built afresh each time
        got.append(engine_scale.digest(store, 4, str(sample)))
        cache.rename(tmp_path / run)
    assert info is not None and got[0]["chunks"] == info["chunks"]
    assert got[0] == got[1]
