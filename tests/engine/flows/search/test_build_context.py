"""build_context through the engine: determinism, bad input, live + memory together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.errors import (
    CtxError,
    EmptyQuery,
    InvalidBudget,
    InvalidInput,
    InvalidItemKind,
    LiveSnapshotTooLarge,
    NotUtf8,
)
from engine.facade import ContextEngine

NOW = 1_767_000_000.0


@pytest.fixture
def filled(engine: ContextEngine, tmp_path: Path) -> ContextEngine:
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "deploy.md").write_text(
        "# Deploy\n\nProduction deploys run from the release branch every Tuesday.\n\n"
        "## Rollback\n\nA rollback uses the previous image tag and takes five minutes.\n")
    (docs / "oncall.md").write_text("# On-call\n\nThe pager rotates weekly on Mondays.\n")
    engine.wait(engine.ingest(paths=[str(docs)]))
    return engine


@pytest.mark.parametrize("mode", ["fast", "dense_cached"])
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_same_inputs_same_payload(filled: ContextEngine, mode: str, fmt: str) -> None:
    live = [{"kind": "terminal", "source": "zsh", "title": "zsh", "text": "deploy failed: tag"}]
    a = filled.build_context("how do I roll back a deploy", live=live, budget=300, fmt=fmt,
                             mode=mode, now=NOW)
    b = filled.build_context("how do I roll back a deploy", live=live, budget=300, fmt=fmt,
                             mode=mode, now=NOW)
    assert a.context == b.context and a.items == b.items
    assert 0 < a.total_tokens <= 300
    assert filled.rt.counter.count(a.context) == a.total_tokens


def test_access_stats_are_recorded(filled: ContextEngine) -> None:
    payload = filled.build_context("rollback image tag", budget=200, now=NOW)
    assert payload.items
    counts = filled.rt.vault._query("SELECT sum(count) FROM access_stats")[0][0]
    assert counts and counts >= 1


def test_budget_zero_is_refused(filled: ContextEngine) -> None:
    """One rule for build and recall alike (docs/wire.md): a budget is 1..200000."""
    with pytest.raises(InvalidBudget) as info:
        filled.build_context("deploy", budget=0)
    assert "empty context" in info.value.message


@pytest.mark.parametrize("kwargs, error", [
    ({"query": ""}, EmptyQuery),
    ({"query": "   "}, EmptyQuery),
    ({"query": "deploy", "budget": -1}, InvalidBudget),
    ({"query": "deploy", "budget": "many"}, InvalidBudget),
    ({"query": "deploy", "live": [{"kind": "telepathy", "text": "x"}]}, InvalidItemKind),
    ({"query": "deploy", "live": [{"kind": "clipboard", "text": "x" * 3_000_000}]},
     LiveSnapshotTooLarge),
    ({"query": "deploy", "live": [{"kind": "other", "text": "x"}] * 500}, LiveSnapshotTooLarge),
    ({"query": "deploy", "live": [{"kind": "other", "text": b"\xff\xfe"}]}, NotUtf8),
    ({"query": "deploy \udc80"}, NotUtf8),
    ({"query": "deploy", "live": [{"kind": "other", "text": "x", "secret": 1}]}, InvalidInput),
    ({"query": "deploy", "conversation": "not a list"}, InvalidInput),
])
def test_bad_input_has_stable_codes(filled: ContextEngine, kwargs: dict[str, Any],
                                    error: type[CtxError]) -> None:
    before = filled.status().chunks
    with pytest.raises(error) as info:
        filled.build_context(**kwargs)
    assert info.value.code == error.code and info.value.name == error.name
    assert "x" * 50 not in str(info.value)
    assert filled.status().chunks == before


@pytest.mark.integration
def test_live_and_memory_both_appear(real_engine: ContextEngine, tmp_path: Path) -> None:
    """The module spec's integration test, with the real model."""
    docs = tmp_path / "kb"
    docs.mkdir()
    (docs / "retry.md").write_text(
        "# Retry policy\n\nWe decided that HTTP clients retry three times with exponential "
        "backoff starting at 200 ms, and never retry POST requests.\n")
    (docs / "lunch.md").write_text("# Lunch\n\nThe cafeteria serves soup on Fridays.\n")
    real_engine.wait(real_engine.ingest(paths=[str(docs)]))
    live = [{"kind": "active_file", "source": "/src/http_client.py", "title": "http_client.py",
             "text": "def send(request):\n    # TODO: add retries with backoff here\n"
                     "    return session.request(request.method, request.url)\n"},
            {"kind": "clipboard", "source": "clipboard", "title": "clipboard",
             "text": "grocery list: apples, pears"}]
    payload = real_engine.build_context("how should I add retries to the HTTP client?",
                                        live=live, budget=400, now=NOW)
    kinds = [i.kind for i in payload.items]
    assert any(k.startswith("live:active_file") for k in kinds)
    assert any(not k.startswith("live") for k in kinds)
    assert "exponential backoff" in payload.context
    assert "TODO: add retries" in payload.context
    assert payload.total_tokens <= 400
    assert real_engine.rt.counter.count(payload.context) == payload.total_tokens


def test_missing_cross_encoder_is_a_config_error(filled: ContextEngine, tmp_path: Path) -> None:
    from engine.errors import ConfigError

    with pytest.raises(ConfigError, match="cross_encoder"):
        filled.build_context("deploy", budget=100,
                             config={"search": {"cross_encoder_path": str(tmp_path / "none")}})


@pytest.mark.integration
def test_local_cross_encoder_reranks(filled: ContextEngine, tmp_path: Path) -> None:
    """A cross-encoder saved to a local folder (MiniLM with a fresh scoring head) is used."""
    import torch
    from sentence_transformers import CrossEncoder

    from engine.embedding.minilm import minilm_path

    torch.manual_seed(0)
    model_dir = tmp_path / "cross"
    CrossEncoder(str(minilm_path()), num_labels=1, local_files_only=True).save(str(model_dir))
    cfg = {"search": {"cross_encoder_path": str(model_dir)}}
    payload = filled.build_context("how do I roll back a deploy", budget=200, config=cfg,
                                   now=NOW)
    assert payload.items and payload.total_tokens <= 200
    assert str(model_dir) in filled.rt._cross  # build_context loaded and used it
    cross = filled.rt.cross_encoder(str(model_dir))
    assert len(cross.score("deploy", ["a", "b"])) == 2


def test_live_and_turn_weights_come_from_config(filled: ContextEngine) -> None:
    """Live items and conversation turns score by packing's weights: turned so that the
    clipboard outranks the selection and the first turn the last, the payload says so."""
    live = [{"kind": "selection", "source": "editor", "title": "sel", "text": "alpha beta"},
            {"kind": "clipboard", "source": "clipboard", "title": "clip", "text": "gamma"}]
    turns = [{"role": "user", "text": "first turn here"},
             {"role": "assistant", "text": "last turn here"}]

    def order(overrides: dict[str, object] | None) -> tuple[list[str], list[str]]:
        payload = filled.build_context("deploy rollback", live=live, conversation=turns,
                                       budget=600, now=NOW, config=overrides)
        by_score = sorted(payload.items, key=lambda i: -i.score)
        return ([i.kind for i in by_score if i.kind.startswith("live:")],
                [i.source + ":" + str(i.score) for i in by_score if i.kind == "conversation"])

    live_order, turn_scores = order(None)
    assert live_order == ["live:selection", "live:clipboard"]
    flipped: dict[str, object] = {"packing": {"live_priors": {"selection": 0.0, "clipboard": 0.9},
                           "turn_recency_weight": 0.0}}
    live_flipped, turns_flipped = order(flipped)
    assert live_flipped == ["live:clipboard", "live:selection"]
    assert turns_flipped != turn_scores  # recency no longer counts


def test_live_weights_are_validated() -> None:
    from engine.errors import ConfigError
    from engine.packing.config import PackingConfig

    with pytest.raises(ConfigError):
        PackingConfig(live_priors={"selection": -1.0})
    with pytest.raises(ConfigError):
        PackingConfig(turn_term_weight=11.0)
