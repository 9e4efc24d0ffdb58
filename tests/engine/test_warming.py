"""The warm-up announces each stage (Warming events): the model, then the vectors, then all;
a stage that fails is announced with its error and the warm-up goes on."""

from __future__ import annotations

from pathlib import Path

from engine.api import Event, Warming
from engine.facade import ContextEngine


def test_warm_up_announces_the_model_then_the_vectors(engine: ContextEngine) -> None:
    heard: list[Event] = []
    engine.subscribe(heard.append)
    assert engine.warm_up(background=False) is None
    stages = [(e.stage, e.done) for e in heard if isinstance(e, Warming)]
    assert stages == [("model", False), ("model", True), ("vectors", False),
                      ("vectors", True), ("all", True)]
    model_done = [e for e in heard if isinstance(e, Warming) and e.stage == "model"][-1]
    assert model_done.error is None and model_done.seconds >= 0
    assert engine.status().model_loaded


def test_a_model_that_fails_to_load_is_announced_with_its_error(
        data_dir: Path, monkeypatch: object) -> None:
    engine = ContextEngine.open(data_dir)
    try:
        def broken() -> None:
            raise OSError("weights unreadable")
        engine.rt.embedder.load = broken  # type: ignore[method-assign]
        heard: list[Event] = []
        engine.subscribe(heard.append)
        thread = engine.warm_up()
        assert thread is not None
        thread.join(30)
        done = [e for e in heard if isinstance(e, Warming) and e.done]
        assert [e.stage for e in done] == ["model", "vectors", "all"]
        assert done[0].error is not None and done[0].error.name == "internal_error"
        assert "weights unreadable" not in repr(done[0])  # a bug's message is not echoed
    finally:
        engine.close()
