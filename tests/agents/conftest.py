"""Background engines started by a test stop with it; they also stop when idle."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.agents.engines import stop_engine


@pytest.fixture(autouse=True)
def _stop_background_engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CTX_ENGINE_IDLE_S", "120")
    yield
    stop_engine(os.environ["CTX_HOME"])
