"""The default key file: where ctx finds a passphrase by itself (`make run` makes it).

Before, a store whose passphrase `make run` put in ~/.config/ctx/keyfile could be
opened only with CTX_KEY_FILE set: every plain `ctx` command in the same HOME said
key_unavailable, and no error named the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine import init_store, probe_store
from engine.crypto import keys
from engine.crypto.config import KeyConfig
from engine.errors import KeyUnavailable, WrongKey
from engine.paths import default_key_file

CHEAP = KeyConfig(scrypt_n=1024)


@pytest.fixture
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> Path:
    """No CTX_PASSPHRASE, no CTX_KEY_FILE; the default key file's path (not made)."""
    monkeypatch.delenv("CTX_PASSPHRASE", raising=False)
    monkeypatch.delenv("CTX_KEY_FILE", raising=False)
    path = default_key_file()
    assert path.parent.parent == Path(os.environ["XDG_CONFIG_HOME"])  # conftest's, not yours
    return path


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    path.chmod(mode)


def test_the_default_key_file_unlocks_by_itself(no_env_key: Path, tmp_path: Path) -> None:
    _write(no_env_key, "a random passphrase from make run")
    root = tmp_path / "store"
    root.mkdir()
    key = keys.create_key(root, CHEAP, use_keychain=False)
    assert keys.headless_key_available()
    assert keys.unlock_key(root) == key
    assert keys.unlock_key(root, passphrase="a random passphrase from make run") == key


def test_a_wrong_key_file_is_named(no_env_key: Path, tmp_path: Path,
                                   caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "store"
    root.mkdir()
    keys.create_key(root, CHEAP, passphrase="the real one", use_keychain=False)
    _write(no_env_key, "another passphrase")
    with caplog.at_level("WARNING"), pytest.raises(WrongKey) as err:
        keys.unlock_key(root)
    assert str(no_env_key) in err.value.message
    # the key-file warning (DESIGN: headless use only) says what happened, never that
    # a key it could not open was unlocked: it is printed just above the wrong_key error
    said = [r.getMessage() for r in caplog.records if r.name == "ctx.keys"]
    assert said and not any("unlocked" in m for m in said), said


def test_a_key_file_others_can_read_is_refused_by_name(no_env_key: Path,
                                                        tmp_path: Path) -> None:
    _write(no_env_key, "a passphrase", mode=0o644)
    with pytest.raises(KeyUnavailable) as err:
        keys.headless_passphrase()
    assert str(no_env_key) in err.value.message and "chmod 600" in err.value.message


def test_without_any_key_the_error_says_where_ctx_looks(no_env_key: Path,
                                                        tmp_path: Path) -> None:
    root = init_store(tmp_path / "store", passphrase="typed once", use_keychain=False)
    assert not keys.headless_key_available()
    with pytest.raises(KeyUnavailable) as err:
        keys.unlock_key(root)
    assert str(no_env_key) in err.value.message
    probe = probe_store(root)
    assert probe.key == "none" and probe.problem is not None
    assert str(no_env_key) in probe.problem.message
    _write(no_env_key, "typed once")
    assert probe_store(root, unlock=True).key == "passphrase-env"


def test_ctx_key_file_wins_over_the_default(no_env_key: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _write(no_env_key, "the default one")
    named = tmp_path / "named"
    _write(named, "the named one")
    monkeypatch.setenv("CTX_KEY_FILE", str(named))
    assert keys.headless_passphrase() == "the named one"


def test_init_says_the_key_file_it_used(no_env_key: Path, tmp_path: Path) -> None:
    from tests.agents.engines import ctx

    _write(no_env_key, "made by make run")
    done = ctx("init", "--no-keychain", "--data-dir", str(tmp_path / "store"))
    assert done.returncode == 0, done.stderr
    assert f"wrapped with the passphrase in {no_env_key}" in done.stdout, done.stdout
    assert keys.unlock_key(tmp_path / "store")  # and a later command finds it there
