"""Disk full: a clear ``no_space`` error, nothing stored is lost, the store opens to be read.

The disk is real: a 6 MB tmpfs mounted for the test (root only; skipped elsewhere).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import NoSpace, VaultDamaged
from engine.facade import ContextEngine
from engine.metrics import ALERT_VECTOR_DOWN


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs",
                           str(mnt)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()[:80]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path) -> None:
    """Take up every free block of ``disk`` with a file outside the store."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_full_disk_says_no_space_and_the_store_still_reads(small_disk: Path) -> None:
    store = small_disk / "store"
    eng = ContextEngine.open(store)
    try:
        last = None
        for i in range(400):
            snap = eng.wait(eng.ingest(text=" ".join(f"w{i}x{j}" for j in range(3000)),
                                       title=f"t{i}"))
            if snap.state != "done":
                last = snap
                break
        assert last is not None, "the disk never filled"
        assert last.state == "failed" and last.error is not None and last.error.name == "no_space"
        kept = eng.status().sources
        assert kept >= 1
        assert eng.search("w0x5", k=3)
    finally:
        eng.close()
    _fill(small_disk)  # the clean-up gave the reserved space back: take it up again
    with ContextEngine.open(store) as eng:  # still full: opens, reads, refuses writes
        status = eng.status()
        assert status.sources == kept
        hits = eng.search("w0x5", k=3)
        assert hits and hits[0].title == "t0"
        payload = eng.build_context("w0x5", budget=200)
        assert payload.total_tokens <= 200
        assert ALERT_VECTOR_DOWN in eng.metrics().alerts or status.vector_store_ok
        # A small note may still fit in WAL blocks a rolled-back batch left allocated
        # (and is then stored, rightly); twice the text that filled the disk cannot.
        job = eng.wait(eng.ingest(text=" ".join(f"v{j}" for j in range(6000)), title="more"))
        assert job.state == "failed" and job.error is not None and job.error.name == "no_space"
        assert eng.status().sources == kept


def test_a_folder_job_on_a_full_disk_says_what_it_stored_and_leaves_nothing_pending(
        small_disk: Path, tmp_path: Path) -> None:
    """One job of 200 files fills the disk: its error says how many files it stored (all
    of them whole and kept), and none of the failed batch's sources stays pending in the
    vault: their clean-up gets the data dir's reserved space. Before, the job said
    "nothing was written" over 6 stored files, and 2 pending sources stayed."""
    import random

    docs = tmp_path / "docs"
    docs.mkdir()
    rnd = random.Random(1)
    for i in range(200):
        (docs / f"f{i:03d}.md").write_text(" ".join(f"w{rnd.randrange(10**6)}"
                                                    for _ in range(3000)))
    store = small_disk / "store"
    with ContextEngine.open(store) as eng:
        snap = eng.wait(eng.ingest(paths=[str(docs)]))
        assert snap.state == "failed" and snap.error is not None and snap.error.name == "no_space"
        stored = eng.status().sources
        assert 1 <= stored < 200
        assert f"{stored} of 200 files were stored" in snap.error.message
        assert snap.error.details == {"stored": stored, "files": 200}
        assert len(snap.sources) == stored
        assert eng.rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'"
                                  )[0][0] == 0
    with ContextEngine.open(store) as eng:  # the disk is still full: it opens, reads
        assert eng.status().sources == stored
        assert eng.rt.vault._query("SELECT count(*) FROM sources WHERE state != 'ready'"
                                  )[0][0] == 0


def test_a_store_closed_cleanly_opens_to_be_read_on_a_full_disk(small_disk: Path) -> None:
    """A clean close removes the vault's WAL files, and an open must make its WAL index
    (-shm, 32 KB) again before it can read a page: on a full disk that failed as "vault.db
    could not be read (I/O error)", a false alarm of damage over a sound vault. The
    data dir's reserved space is what such a moment is for: the open takes it back, makes
    the index, and the store reads (writes still say no_space)."""
    store = small_disk / "store"
    with ContextEngine.open(store) as eng:
        eng.wait(eng.ingest(text="The night ferry leaves the harbour at 22:40.", title="ferry"))
    assert not (store / "vault.db-shm").exists()  # closed cleanly: no WAL files left
    _fill(small_disk)
    with ContextEngine.open(store) as eng:
        assert eng.status().sources == 1
        hits = eng.search("night ferry", k=1)
        assert hits and hits[0].title == "ferry"
        job = eng.wait(eng.ingest(text=" ".join(f"v{j}" for j in range(6000)), title="more"))
        assert job.state == "failed" and job.error is not None and job.error.name == "no_space"
        assert eng.status().sources == 1


def test_a_full_disk_with_no_room_to_read_says_no_space_not_damage(small_disk: Path) -> None:
    """With no reserved space to take back either, the open cannot make the WAL index it
    reads through: it says the disk is full (no_space), not that the vault is damaged,
    and changes nothing; once there is room again the store opens as it was."""
    store = small_disk / "store"
    with ContextEngine.open(store) as eng:
        eng.wait(eng.ingest(text="The night ferry leaves the harbour at 22:40.", title="ferry"))
    (store / "space.reserve").unlink()
    _fill(small_disk)
    before = sorted(p.name for p in store.iterdir())
    with pytest.raises(NoSpace) as refused:
        ContextEngine.open(store)
    assert "full" in refused.value.message
    assert sorted(p.name for p in store.iterdir()) == before
    (small_disk / "filler").unlink()
    with ContextEngine.open(store) as eng:
        assert eng.search("night ferry", k=1)[0].title == "ferry"


def test_opens_on_a_full_disk_keep_the_reserve_and_stay_read_only(small_disk: Path) -> None:
    """The reserve only lends what a reader needs: open after open on the full disk, each
    one reads and refuses writes (the space the first borrowed is not taken for a write
    by the next), the reserve stays, and a later open with room fills it up again."""
    store = small_disk / "store"
    with ContextEngine.open(store) as eng:
        eng.wait(eng.ingest(text="The night ferry leaves the harbour at 22:40.", title="ferry"))
    full_size = (store / "space.reserve").stat().st_size
    _fill(small_disk)
    for _ in range(3):
        with ContextEngine.open(store) as eng:
            assert eng.rt.vault.read_only
            assert eng.search("night ferry", k=1)[0].title == "ferry"
            job = eng.wait(eng.ingest(text="A second note.", title="second"))
            assert job.state == "failed" and job.error is not None
            assert job.error.name == "no_space"
        assert 0 < (store / "space.reserve").stat().st_size < full_size
    (small_disk / "filler").unlink()
    with ContextEngine.open(store) as eng:
        assert not eng.rt.vault.read_only
    assert (store / "space.reserve").stat().st_size == full_size


def test_a_damaged_vault_on_a_full_disk_says_damaged(small_disk: Path) -> None:
    """No room to read and a page that fails its check: the open says the vault is
    damaged (what a restore answers), not only that the disk is full; the reserve is left
    as it was."""
    store = small_disk / "store"
    with ContextEngine.open(store) as eng:
        eng.wait(eng.ingest(text="The night ferry leaves the harbour at 22:40.", title="ferry"))
    vault = store / "vault.db"
    data = bytearray(vault.read_bytes())
    data[3 * 4096 + 100] ^= 0xFF  # page 4, past the header
    vault.write_bytes(bytes(data))
    (store / "space.reserve").unlink()
    _fill(small_disk)
    with pytest.raises(VaultDamaged) as refused:
        ContextEngine.open(store)
    assert "page 4" in refused.value.message
