"""A damaged vault page is named `vault_damaged` wherever it is met, and nothing changes.

Real stores (SQLCipher vault, embedded Chroma), real `ctx` processes: a bit
flipped in any page of vault.db, opened in this process, by `ctx --local
status` and by `ctx search` through a background engine; a bit flipped, or the
vault replaced, under a running engine; `ctx repair` over a vectors/ that is a
file. Before, a page other than the second gave a traceback (`ctx status`) or
`server_unavailable` (`ctx search`), pages no query read went unnoticed, and a
replaced vault answered `internal_error`.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import CtxError, VaultDamaged, WrongKey
from engine.facade import ContextEngine
from ipc.exit_codes import exit_code
from tests.agents.engines import ctx, stop_engine
from tests.engine.store.vault.test_damaged_stores import snapshot

PAGE = 4096


_BUILT: dict[str, Path] = {}


@pytest.fixture
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of a few dozen pages, its WAL checkpointed (the engine closed); built once
    (under the test environment, which the autouse fixture sets per test)."""
    if "good" not in _BUILT:
        root = tmp_path_factory.mktemp("vault-damage") / "store"
        with ContextEngine.open(root) as eng:
            for i in range(8):
                eng.wait(eng.ingest(text=f"Harbour log {i}: the ferry left at dawn, tides "
                                         "ran high and the crane lifted crates. " * 40,
                                    title=f"log {i}"))
        _BUILT["good"] = root
    return _BUILT["good"]


def _copy(good: Path, dest: Path) -> Path:
    shutil.copytree(good, dest)
    return dest


def _flip(vault: Path, page: int) -> None:
    """One bit flipped inside ``page`` (1-based), the file rewritten in place."""
    offset = (page - 1) * PAGE + 100 + (page * 37) % 3800
    with open(vault, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x10]))


def _vault_bytes(root: Path) -> str:
    return hashlib.sha256((root / "vault.db").read_bytes()).hexdigest()


def test_every_page_flipped_is_named_and_left_alone(good: Path, tmp_path: Path) -> None:
    pages = (good / "vault.db").stat().st_size // PAGE
    assert pages >= 30
    for page in range(1, pages + 1):
        d = _copy(good, tmp_path / f"p{page}")
        _flip(d / "vault.db", page)
        before = snapshot(d)
        with pytest.raises(CtxError) as info:
            ContextEngine.open(d).close()
        # page 1 holds the salt and the schema's root: it reads as another store's file
        expected = WrongKey if page == 1 else VaultDamaged
        assert isinstance(info.value, expected), (page, info.value.name, info.value.message)
        assert exit_code(info.value) == 4
        assert snapshot(d) == before, f"page {page}: the failed open changed the data dir"
        shutil.rmtree(d)


def _env(root: Path) -> dict[str, str]:
    return {"CTX_HOME": str(root), "CTX_ENGINE_IDLE_S": "60"}


@pytest.fixture
def engines() -> Iterator[list[Path]]:
    """Stores whose background engine the test may have started: stopped after."""
    started: list[Path] = []
    yield started
    for root in started:
        stop_engine(root)


def _named(done: subprocess.CompletedProcess[str]) -> None:
    out = f"{done.stdout}{done.stderr}"
    assert done.returncode == 4, out
    assert "[vault_damaged]" in done.stderr, out
    assert "Traceback" not in out and "server_unavailable" not in out


def _log_clean(root: Path) -> None:
    log = root / "logs" / "engine.log"
    text = log.read_text() if log.exists() else ""
    assert "Traceback" not in text and "internal_error" not in text, text


@pytest.mark.parametrize("page", [2, 5, 10, 20, 30, -1])
def test_cli_names_a_flipped_page_local_and_through_the_engine(
        page: int, good: Path, tmp_path: Path, engines: list[Path]) -> None:
    d = _copy(good, tmp_path / "store")
    pages = (d / "vault.db").stat().st_size // PAGE
    _flip(d / "vault.db", pages if page == -1 else page)
    vault = _vault_bytes(d)
    _named(ctx("--local", "status", env=_env(d)))
    engines.append(d)
    _named(ctx("search", "ferry at dawn", env=_env(d)))  # a background engine would serve
    assert _vault_bytes(d) == vault
    _log_clean(d)


def test_damage_under_a_running_engine_is_named(good: Path, tmp_path: Path,
                                                engines: list[Path]) -> None:
    d = _copy(good, tmp_path / "store")
    engines.append(d)
    first = ctx("search", "crane lifted crates", env=_env(d))
    assert first.returncode == 0 and "Harbour log" in first.stdout, first.stderr
    pages = (d / "vault.db").stat().st_size // PAGE
    _flip(d / "vault.db", pages - 3)  # a page the search did not need
    _named(ctx("status", env=_env(d)))
    _named(ctx("search", "crane lifted crates", env=_env(d)))
    _log_clean(d)
    assert "vault damaged" in (d / "logs" / "engine.log").read_text()


@pytest.mark.parametrize("how", ["copied over", "moved over"])
def test_a_vault_replaced_under_a_running_engine_is_named(
        how: str, good: Path, tmp_path: Path, engines: list[Path]) -> None:
    d = _copy(good, tmp_path / "store")
    other = tmp_path / "other"
    with ContextEngine.open(other) as eng:
        eng.wait(eng.ingest(text="Another store's note about gardens. " * 20, title="x"))
    engines.append(d)
    assert ctx("search", "crane", env=_env(d)).returncode == 0
    if how == "copied over":
        shutil.copyfile(other / "vault.db", d / "vault.db")  # the same file, new bytes
    else:
        shutil.copyfile(other / "vault.db", tmp_path / "x.db")
        (tmp_path / "x.db").replace(d / "vault.db")  # a new file in its place
    _named(ctx("status", env=_env(d)))
    _named(ctx("search", "crane", env=_env(d)))
    _log_clean(d)


def test_repair_sets_aside_a_vectors_file(good: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")  # vectors/ is Chroma's
    d = _copy(good, tmp_path / "store")
    shutil.rmtree(d / "vectors", ignore_errors=True)
    (d / "vectors").write_text("not a folder")
    refused = ctx("--local", "status", env=_env(d))
    assert refused.returncode == 4 and "[vectors_damaged]" in refused.stderr
    done = ctx("repair", env=_env(d))
    assert done.returncode == 0, done.stderr
    assert "set aside" in done.stdout
    assert (d / "vectors").is_dir()
    kept = [p for p in d.iterdir() if p.name.startswith("vectors.damaged-")]
    assert len(kept) == 1 and kept[0].read_text() == "not a folder"
    found = ctx("--local", "search", "crane lifted crates", env=_env(d))
    assert found.returncode == 0 and "vector]" in found.stdout, found.stderr


def test_a_page_format_the_check_does_not_know_raises_no_false_alarm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page check computes SQLCipher 4's default HMAC layout itself. Were SQLCipher's
    defaults to change under it (here: the check assumes 8 KB pages), it would fail
    every page of a sound vault: it sees that SQLCipher reads page 1 and calls nothing
    damaged; a real damage is still found with the right layout."""
    from sqlcipher3 import dbapi2 as sqlite

    from engine.store.vault import integrity

    hexkey = "11" * 32
    path = tmp_path / "vault.db"
    conn = sqlite.connect(str(path))
    conn.execute(f"PRAGMA key = \"x'{hexkey}'\"")
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i}" * 40,) for i in range(500)])
    conn.commit()
    conn.close()
    _flip(path, 3)
    assert integrity.failed_pages(path, hexkey) == [3]
    monkeypatch.setattr(integrity, "PAGE", 8192)
    assert integrity.failed_pages(path, hexkey) == []


def test_the_lock_byte_page_of_a_vault_past_1_gib_is_not_damage(tmp_path: Path) -> None:
    """SQLite never writes the page that holds byte 0x40000000 (its lock bytes): in a vault
    over 1 GiB it is zeros, with no HMAC. The check once called it damaged, and every read
    of a store past about 500k chunks then failed (VaultDamaged, page 262145). A zero page
    anywhere else is still damage. (The file is made sparse past 1 GiB: no disk used.)"""
    from sqlcipher3 import dbapi2 as sqlite

    from engine.store.vault import integrity

    hexkey = "22" * 32
    path = tmp_path / "vault.db"
    conn = sqlite.connect(str(path))
    conn.execute(f"PRAGMA key = \"x'{hexkey}'\"")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    lock = 0x40000000 // integrity.PAGE + 1
    assert lock == 262145
    with open(path, "r+b") as fh:
        fh.truncate((lock + 1) * integrity.PAGE)
    assert integrity.failed_pages(path, hexkey, only=[1, lock - 1, lock, lock + 1]) == [
        lock - 1, lock + 1]
