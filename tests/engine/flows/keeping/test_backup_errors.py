"""A wrong key, a truncated or tampered backup, a backup of another store: each a named
error with exit code 4 from `ctx`, and nothing written anywhere."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import ContextEngine, generate_recovery_key, init_store
from tests.conftest import TEST_PASSPHRASE
from tests.engine.flows.keeping.stores import ctx, fresh_env, tree


@pytest.fixture
def backups(tmp_path: Path) -> dict[str, object]:
    """Two stores, A and B, each backed up; A's recovery key."""
    base = tmp_path / "stores"
    rk = generate_recovery_key()
    out: dict[str, object] = {"rk": rk, "base": base}
    for name in ("a", "b"):
        root = base / name
        init_store(root, passphrase=TEST_PASSPHRASE, use_keychain=False,
                   recovery_key=rk if name == "a" else None)
        with ContextEngine.open(root, create=False, passphrase=TEST_PASSPHRASE) as eng:
            for i in range(5):
                eng.ingest(text=f"store {name} note {i}: the quay is closed on tuesdays",
                           title=f"{name}{i}", wait=True)
            out[name] = eng.backup(str(base / f"{name}.ctxbackup")).path
        out[name + "_root"] = root
    return out


def _run(args: list[str], tmp: Path, stdin: str = "", **env: str) -> tuple[int, str]:
    done = ctx(args, fresh_env(tmp / "home", **env), stdin=stdin)
    return done.returncode, done.stderr


def _copy_with(src: object, dest: Path, change: Callable[[bytearray], object]) -> str:
    data = bytearray(Path(str(src)).read_bytes())
    change(data)
    dest.write_bytes(bytes(data))
    return str(dest)


def test_wrong_passphrase_and_wrong_recovery_key(backups: dict[str, object], tmp_path: Path
                                                 ) -> None:
    target = tmp_path / "restored"
    code, err = _run(["restore", str(backups["a"]), "--data-dir", str(target)], tmp_path,
                     CTX_PASSPHRASE="not the passphrase")
    assert code == 4 and "[wrong_key]" in err and "this backup" in err
    code, err = _run(["restore", str(backups["a"]), "--data-dir", str(target),
                      "--recovery-key-stdin"], tmp_path, stdin=generate_recovery_key() + "\n")
    assert code == 4 and "[wrong_key]" in err
    typo = str(backups["rk"])
    typo = ("B" if typo[0] != "B" else "C") + typo[1:]
    code, err = _run(["restore", str(backups["a"]), "--data-dir", str(target),
                      "--recovery-key-stdin"], tmp_path, stdin=typo + "\n")
    assert code == 4 and "[recovery_key_invalid]" in err and "typo" in err
    code, err = _run(["restore", str(backups["b"]), "--data-dir", str(target),
                      "--recovery-key-stdin"], tmp_path, stdin=str(backups["rk"]) + "\n")
    assert code == 4 and "no recovery key" in err  # B was made without one
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".restored")] == []


@pytest.mark.parametrize("damage", ["truncated", "flipped", "header", "appended", "empty"])
def test_damaged_backups_are_named(backups: dict[str, object], tmp_path: Path,
                                   damage: str) -> None:
    src = backups["a"]
    size = Path(str(src)).stat().st_size

    def change(data: bytearray) -> None:
        if damage == "truncated":
            del data[size - 100:]
        elif damage == "flipped":
            data[size // 2] ^= 0x40
        elif damage == "header":  # the clear header edited: a date moved
            at = data.index(b'"created": ') + len(b'"created": ')
            data[at] = ord("2") if data[at] != ord("2") else ord("3")
        elif damage == "appended":
            data += struct.pack(">I", 20) + bytes(20)
        else:
            del data[:]
    bad = _copy_with(src, tmp_path / "bad.ctxbackup", change)
    target = tmp_path / "restored"
    code, err = _run(["restore", bad, "--data-dir", str(target)], tmp_path,
                     CTX_PASSPHRASE=TEST_PASSPHRASE)
    assert code == 4 and "[backup_damaged]" in err, err
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".restored")] == []
    code, err = _run(["backup", "--verify", bad], tmp_path, CTX_PASSPHRASE=TEST_PASSPHRASE)
    assert code == 4 and "[backup_damaged]" in err


def test_another_stores_backup_is_named_and_changes_nothing(backups: dict[str, object],
                                                            tmp_path: Path) -> None:
    root_a = Path(str(backups["a_root"]))
    env = {"CTX_PASSPHRASE": TEST_PASSPHRASE}
    code, err = _run(["--data-dir", str(root_a), "--local", "backup", "--verify",
                      str(backups["b"])], tmp_path, **env)
    assert code == 4 and "[backup_of_another_store]" in err
    before = tree(root_a)  # (opening the store above wrote its audit record)
    code, err = _run(["restore", str(backups["b"]), "--data-dir", str(root_a), "--replace"],
                     tmp_path, **env)
    assert code == 4 and "[backup_of_another_store]" in err
    code, err = _run(["restore", str(backups["a"]), "--data-dir", str(root_a)], tmp_path, **env)
    assert code == 4 and "[store_exists]" in err and "--replace" in err
    assert tree(root_a) == before
    assert sorted(p.name for p in root_a.parent.iterdir()) == [
        "a", "a.ctxbackup", "b", "b.ctxbackup"]


def test_replace_rolls_a_store_back_and_keeps_the_old_one(backups: dict[str, object],
                                                          tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "store"
    shutil.copytree(str(backups["a_root"]), root)  # the same store, in another folder
    with ContextEngine.open(root, create=False, passphrase=TEST_PASSPHRASE) as eng:
        eng.ingest(text="written after the backup", title="late", wait=True)
        assert len(eng.sources()) == 6
    code, err = _run(["restore", str(backups["a"]), "--data-dir", str(root), "--replace",
                      "--json"], tmp_path, CTX_PASSPHRASE=TEST_PASSPHRASE)
    assert code == 0, err
    with ContextEngine.open(root, create=False, passphrase=TEST_PASSPHRASE) as eng:
        assert sorted(s.title for s in eng.sources()) == [f"a{i}" for i in range(5)]
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("store.replaced-")]
    assert len(kept) == 1
    with ContextEngine.open(kept[0], create=False, passphrase=TEST_PASSPHRASE) as eng:
        assert len(eng.sources()) == 6
    assert json.loads((root / "key.json").read_text())["store_id"] == \
        json.loads((kept[0] / "key.json").read_text())["store_id"]
