"""Damaged or foreign stores: a clear error with a stable code, and nothing on disk changes.

Each case copies a real store (SQLCipher vault, embedded Chroma), damages it
the way a careless user or an attacker would, opens it, and compares a hash of
every file, folder and mode under the data dir before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.crypto import keys
from engine.errors import CtxError
from engine.facade import ContextEngine
from engine.store.vault.core import Vault
from ipc.exit_codes import exit_code


@pytest.fixture(autouse=True)
def _embedded_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the embedded Chroma store (the default keeps vectors in
    memory, tests/engine/store/vectors/test_vector_snapshot.py)."""
    monkeypatch.setenv("CTX__STORE__VECTOR_BACKEND", "embedded")

REPO = Path(__file__).resolve().parents[4]
_BUILT: dict[str, Path] = {}


def _build(path: Path, n: int) -> Path:
    with ContextEngine.open(path) as eng:
        for i in range(n):
            eng.wait(eng.ingest(text=f"Note {i} on harbours, tides and the ferry timetable. "
                                     * 12, title=f"note {i}"))
    return path


@pytest.fixture
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real stores made with the test passphrase (built once per session)."""
    if not _BUILT:
        base = tmp_path_factory.mktemp("stores")
        _BUILT["main"] = _build(base / "main", 12)
        _BUILT["other"] = _build(base / "other", 3)
    return _BUILT


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (and root itself) with its mode and content hash."""
    out: dict[str, str] = {}
    if not root.exists():
        return {}
    paths = [root, *sorted(root.rglob("*"))] if root.is_dir() else [root]
    for p in paths:
        st = p.lstat()
        kind = "d" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        out[str(p.relative_to(root.parent))] = f"{oct(st.st_mode)} {kind}"
    return out


def vault_key(root: Path) -> bytes:
    return keys.derive(keys.unlock_key(root, passphrase=os.environ["CTX_PASSPHRASE"]), "vault")


def _edit_key(field: str, value: object) -> Callable[[Path, Path], None]:
    def edit(d: Path, other: Path) -> None:
        rec = json.loads((d / "key.json").read_text())
        rec[field] = value
        (d / "key.json").write_text(json.dumps(rec))
    return edit


def _garble(name: str, start: int, length: int) -> Callable[[Path, Path], None]:
    def garble(d: Path, other: Path) -> None:
        p = d / name
        data = bytearray(p.read_bytes())
        data[start:start + length] = bytes((i * 37 + 11) % 256 for i in range(length))
        p.write_bytes(bytes(data))
    return garble


def _truncate(name: str, size: Callable[[int], int]) -> Callable[[Path, Path], None]:
    def cut(d: Path, other: Path) -> None:
        p = d / name
        os.truncate(p, size(p.stat().st_size))
    return cut


def _replace_dir_with_file(name: str) -> Callable[[Path, Path], None]:
    def swap(d: Path, other: Path) -> None:
        p = d / name
        shutil.rmtree(p) if p.is_dir() else p.unlink()
        p.write_text("not what you think")
    return swap


def _replace_with_dir(name: str) -> Callable[[Path, Path], None]:
    def swap(d: Path, other: Path) -> None:
        p = d / name
        p.unlink()
        p.mkdir()
    return swap


def _plain_sqlite(d: Path, other: Path) -> None:
    (d / "vault.db").unlink()
    con = sqlite3.connect(d / "vault.db")
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()


def _newer_schema(d: Path, other: Path) -> None:
    vault = Vault(d / "vault.db", vault_key(d))
    with vault.write() as c:
        c.execute("INSERT INTO schema_migrations VALUES (999, 0)")
    vault.close()


def _copy_from_other(name: str) -> Callable[[Path, Path], None]:
    def copy(d: Path, other: Path) -> None:
        target = d / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
        if (other / name).is_dir():
            shutil.copytree(other / name, target)
        else:
            shutil.copy2(other / name, target)
    return copy


def _running_copy_from_other(names: tuple[str, ...]) -> Callable[[Path, Path], None]:
    """``names`` (vault.db and its WAL files) copied from the other store while an engine
    had it open, its last write still in the WAL, as a file sync or backup tool would."""
    def copy(d: Path, other: Path) -> None:
        live = d.parent / "other-live"
        shutil.copytree(other, live)
        vault = Vault(live / "vault.db", vault_key(live))
        try:
            with vault.write(chunks=False) as c:
                c.execute("INSERT OR REPLACE INTO meta VALUES ('note', 'written last')")
            assert (live / "vault.db-wal").stat().st_size > 0
            for name in names:
                shutil.copy2(live / name, d / name)
        finally:
            vault.close()
            shutil.rmtree(live)
    return copy


def _remove(name: str) -> Callable[[Path, Path], None]:
    def rm(d: Path, other: Path) -> None:
        p = d / name
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return rm


def _foreign_folder(d: Path, other: Path) -> None:
    shutil.rmtree(d)
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    (d / "holiday.jpg").write_bytes(b"\xff\xd8 not a store")
    (d / "notes.txt").write_text("mine")


def _data_dir_is_file(d: Path, other: Path) -> None:
    shutil.rmtree(d)
    d.write_text("a file, not a folder")


def _garbage_config(d: Path, other: Path) -> None:
    (d / "config.toml").write_text("[store\nvector_backend = 3\n")


def _key_json_binary(d: Path, other: Path) -> None:
    (d / "key.json").write_bytes(b"\xff\xfe\x00garbage")


CASES: list[tuple[str, Callable[[Path, Path], object], str]] = [
    # the key record
    ("key.json bad base64", _edit_key("salt", "!!!not base64!!!"), "key_record_damaged"),
    ("key.json wrapped key too short", _edit_key("wrapped", "AAAA"), "key_record_damaged"),
    ("key.json not JSON", lambda d, o: (d / "key.json").write_text("{oops"),
     "key_record_damaged"),
    ("key.json empty", _truncate("key.json", lambda n: 0), "key_record_damaged"),
    ("key.json binary", _key_json_binary, "key_record_damaged"),
    ("key.json missing field", _edit_key("nonce", None), "key_record_damaged"),
    ("key.json unknown field", _edit_key("extra", 1), "key_record_damaged"),
    ("key.json unknown method", _edit_key("method", "rot13"), "key_record_damaged"),
    ("key.json absurd scrypt cost", _edit_key("scrypt_n", 2 ** 40), "key_record_damaged"),
    ("key.json deleted", _remove("key.json"), "key_record_damaged"),
    ("key.json is a folder", _replace_with_dir("key.json"), "key_record_damaged"),
    ("key.json key_id changed", _edit_key("key_id", "0123456789abcdef"), "wrong_key"),
    ("key.json from another store", _copy_from_other("key.json"), "wrong_key"),
    # the vault
    ("vault.db from another store", _copy_from_other("vault.db"), "wrong_key"),
    ("vault.db first page garbled", _garble("vault.db", 16, 4000), "wrong_key"),
    ("vault.db truncated to half", _truncate("vault.db", lambda n: n // 2), "vault_damaged"),
    ("vault.db truncated mid-page", _truncate("vault.db", lambda n: n // 2 + 100),
     "vault_damaged"),
    ("vault.db empty", _truncate("vault.db", lambda n: 0), "vault_damaged"),
    ("vault.db deleted", _remove("vault.db"), "vault_missing"),
    ("vault.db is a folder", _replace_with_dir("vault.db"), "vault_damaged"),
    ("vault.db is plain SQLite", _plain_sqlite, "vault_damaged"),
    ("vault.db from a newer ctx", _newer_schema, "store_too_new"),
    ("vault.db and its WAL from another store, copied while it ran",
     _running_copy_from_other(("vault.db", "vault.db-wal", "vault.db-shm")), "wrong_key"),
    ("vault.db-wal from another store", _running_copy_from_other(("vault.db-wal",)),
     "vault_damaged"),
    ("vault.db-wal and -shm from another store",
     _running_copy_from_other(("vault.db-wal", "vault.db-shm")), "vault_damaged"),
    # the vectors
    ("chroma.sqlite3 garbled", _garble("vectors/chroma.sqlite3", 100, 8000), "vectors_damaged"),
    ("chroma.sqlite3 truncated", _truncate("vectors/chroma.sqlite3", lambda n: n // 3),
     "vectors_damaged"),
    ("vectors/ is a file", _replace_dir_with_file("vectors"), "vectors_damaged"),
    ("vectors/ from another store", _copy_from_other("vectors"), "vectors_damaged"),
    # the folder itself
    ("data dir is a file", _data_dir_is_file, "not_a_store"),
    ("data dir holds other files", _foreign_folder, "not_a_store"),
    ("engine.lock is a folder", _replace_with_dir("engine.lock"), "store_damaged"),
    ("config.toml garbled", _garbage_config, "config_invalid"),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), CASES, ids=[c[0] for c in CASES])
def test_damaged_store_is_named_and_left_alone(case: str, mutate: Callable[[Path, Path], object],
                                               expected: str, stores: dict[str, Path],
                                               tmp_path: Path) -> None:
    d = tmp_path / "store"
    shutil.copytree(stores["main"], d)
    mutate(d, stores["other"])
    before = snapshot(d)
    with pytest.raises(CtxError) as info:
        ContextEngine.open(d).close()
    err = info.value
    assert err.name == expected, f"{case}: {err.name}: {err.message}"
    assert exit_code(err) in (2, 4)
    assert snapshot(d) == before, f"{case}: the failed open changed the data dir"
    assert "Traceback" not in err.message


def test_typo_data_dir_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "ctx-stroe"
    with pytest.raises(CtxError) as info:
        ContextEngine.open(typo, create=False)
    assert info.value.name == "store_not_initialized"
    assert not typo.exists()
    proc = subprocess.run([sys.executable, "-m", "ipc.cli.main", "--data-dir", str(typo),
                           "status"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 4, proc.stderr
    assert "[store_not_initialized]" in proc.stderr
    assert not typo.exists()


def test_cli_names_a_foreign_vault_wrong_key(stores: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "store"
    shutil.copytree(stores["main"], d)
    _copy_from_other("vault.db")(d, stores["other"])
    proc = subprocess.run([sys.executable, "-m", "ipc.cli.main", "--data-dir", str(d), "search",
                           "harbours"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 4, proc.stderr
    assert "[wrong_key]" in proc.stderr and "Traceback" not in proc.stderr


def test_init_creates_a_store_in_an_existing_folder_only_when_asked(tmp_path: Path) -> None:
    from engine.facade import init_store

    folder = tmp_path / "mine"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(CtxError) as info:
        ContextEngine.open(folder)
    assert info.value.name == "not_a_store"
    assert oct(folder.stat().st_mode & 0o777) == "0o755"
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    init_store(folder)
    with ContextEngine.open(folder, create=False) as eng:
        assert eng.status().sources == 0
    assert (folder / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d, o: None, "store_exists"),  # a sound store: init refuses to make another
    (_remove("vault.db"), "vault_missing"),  # a damaged one: init never writes a new key
    (_remove("key.json"), "key_record_damaged"),
])
def test_init_over_a_store_changes_nothing(mutate: Callable[[Path, Path], None], expected: str,
                                           stores: dict[str, Path], tmp_path: Path) -> None:
    from engine.facade import init_store

    d = tmp_path / "store"
    shutil.copytree(stores["main"], d)
    mutate(d, stores["other"])
    before = snapshot(d)
    with pytest.raises(CtxError) as info:
        init_store(d)
    assert info.value.name == expected
    assert snapshot(d) == before


@pytest.mark.slow
def test_chroma_damaged_anywhere_is_refused_unchanged(stores: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """chroma.sqlite3 garbled page by page (in the page header area and mid-page): every
    open that fails names vectors_damaged and leaves every byte as it was. Before, a
    damaged b-tree page or Chroma's own migration text found only once Chroma had opened
    (it writes on open) left chroma.sqlite3 rewritten, with a Rust panic on stderr."""
    size = (stores["main"] / "vectors" / "chroma.sqlite3").stat().st_size
    refused = 0
    for page in range(size // 4096):
        for offset in (100, 2000):
            d = tmp_path / f"p{page}-{offset}"
            shutil.copytree(stores["main"], d)
            _garble("vectors/chroma.sqlite3", page * 4096 + offset, 64)(d, stores["other"])
            before = snapshot(d)
            try:
                ContextEngine.open(d).close()
            except CtxError as exc:
                refused += 1
                assert exc.name == "vectors_damaged", (page, offset, exc.name)
                assert snapshot(d) == before, f"page {page} +{offset}: the failed open wrote"
            shutil.rmtree(d)
    assert refused >= 3  # the test met damage Chroma cannot read
