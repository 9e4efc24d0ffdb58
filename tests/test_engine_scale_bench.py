"""bench/engine_scale.py's code path at a tiny size (fake embedder, no timing asserted):
the store is grown through the engine, cached, reopened in a child process and measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import engine_scale


def test_engine_scale_builds_caches_and_measures(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_PASSPHRASE", "bench-only")
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", "1024")
    store, rate = engine_scale.build(tmp_path, 300, "fake")
    assert rate is not None and (store / "READY").exists()
    again, cached = engine_scale.build(tmp_path, 300, "fake")
    assert (again, cached) == (store, None)
    r = engine_scale.measure_child(store, "fake", 3)
    assert r["chunks"] >= 300
    for call in ("build_context", "search", "recall"):
        assert set(r[call]) == {"p50", "p95", "cpu_p50", "cpu_p95"}
    assert r["rss_mb"] > 0 and r["first_answer_s"] >= r["open_s"]
