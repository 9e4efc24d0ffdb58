"""The ``backend`` fixture runs a test twice: on the embedded Chroma store and on a real
`chroma run` (the default, vectors in memory, has tests of its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.chroma_server import ChromaStartError, chroma_run


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        with chroma_run(tmp_path_factory.mktemp("chroma-server")) as port:
            yield f"http://127.0.0.1:{port}"
    except ChromaStartError as exc:
        pytest.fail(str(exc))


@pytest.fixture(params=["embedded", "http"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "http":
        url = request.getfixturevalue("chroma_server")
        monkeypatch.setenv("CTX_CHROMA_URL", url)
    else:  # the default keeps vectors in memory; these tests are about Chroma
        monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")
    return str(request.param)
