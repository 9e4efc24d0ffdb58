"""Test-wide isolation: every test gets its own data dir, runtime dir and headless key.

No test reaches a real keychain, the network, or the user's data dir. Unit
tests use the deterministic fake embedder; integration tests ask for the real
model explicitly (``real_engine``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from engine.embedding.base import Embedder


REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TEST_PASSPHRASE = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path / "ctx-home"
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("CTX_HOME", str(home))
    monkeypatch.setenv("CTX_PASSPHRASE", TEST_PASSPHRASE)
    monkeypatch.setenv("CTX_EMBEDDER", "fake")
    monkeypatch.setenv("CTX__KEYS__SCRYPT_N", "1024")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    # the default key file (~/.config/ctx/keyfile) is looked for there: never the user's
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.delenv("CTX_KEY_FILE", raising=False)
    monkeypatch.delenv("CTX_CHROMA_URL", raising=False)
    yield


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return Path(os.environ["CTX_HOME"])


@pytest.fixture
def engine(data_dir: Path) -> Iterator[object]:
    from engine.facade import ContextEngine

    eng = ContextEngine.open(data_dir)
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real embedding model, loaded once per test session."""
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder

    return make_embedder(EmbeddingConfig(model="minilm"))


@pytest.fixture(scope="session")
def minilm_torch() -> Embedder:
    """MiniLM on sentence-transformers (torch), whatever ``minilm`` resolves to."""
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder

    return make_embedder(EmbeddingConfig(model="minilm", backend="torch"))


@pytest.fixture
def real_engine(data_dir: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
                ) -> Iterator[object]:
    from engine.facade import ContextEngine

    monkeypatch.setenv("CTX_EMBEDDER", "minilm")
    eng = ContextEngine.open(data_dir, embedder=minilm)
    try:
        yield eng
    finally:
        eng.close()


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path


@pytest.fixture
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An OS keychain stand-in (a JSON file, tests/keyring_file.py) for this process and
    the processes it starts; never the user's real keychain. Yields the file."""
    import keyring

    from tests.keyring_file import BACKEND, ENV, FileKeyring

    # the backend to restore, read before PYTHON_KEYRING_BACKEND names the stand-in: a
    # keyring first loaded after it would make the stand-in the one "restored"
    before = keyring.get_keyring()
    path = tmp_path / "keychain.json"
    monkeypatch.setenv(ENV, str(path))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", BACKEND)
    keyring.set_keyring(FileKeyring())
    try:
        yield path
    finally:
        keyring.set_keyring(before)
