"""A consistent copy of a vault in use: SQLite's online backup API under one read transaction.

``VaultCopy`` opens its own connection to the vault and starts a read transaction
while the engine's writers are held back for a moment (the vault's write lock),
so that what else the caller captures then (the in-memory vector index) matches
it. The transaction is kept until the copy ends: in WAL mode the engine goes on
writing meanwhile, and the copy, made in steps of ``STEP`` pages (each step a
chance to report progress or stop), is the vault exactly as it was at that
moment. The copy is a SQLCipher file under the same key: not a byte of it is in
the clear.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlcipher3 import dbapi2 as sqlite

from engine.store.vault.core import Vault, store_error
from engine.store.vault.integrity import quiet
from engine.store.vault.transcripts import EXTRA_SEGMENTS

STEP = 256  # pages per backup step (1 MiB at SQLCipher's 4 KiB pages)


class VaultCopy:
    """A read transaction on ``vault``, held until ``close``; ``while_held`` runs with the
    engine's writes held back, at the moment the transaction starts."""

    def __init__(self, vault: Vault, while_held: Callable[[], Any] | None = None) -> None:
        self._hexkey = vault._hexkey
        conn = sqlite.connect(str(vault.path), isolation_level=None, check_same_thread=False,
                              timeout=30.0)
        quiet(conn)
        self._conn = conn
        self.held: Any = None
        try:
            conn.execute(f"PRAGMA key = \"x'{self._hexkey}'\"")
            with vault._write_lock:  # no write of the engine's is half done now
                conn.execute("BEGIN")
                row = conn.execute("SELECT value FROM meta WHERE key = 'chunk_version'"
                                   ).fetchone()  # the first read fixes the snapshot
                self.chunk_version = int(row[0]) if row else 0
                if while_held is not None:
                    self.held = while_held()
            self.pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
            self.page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        except sqlite.DatabaseError as exc:
            self.close()
            raise store_error(exc) from None
        except BaseException:
            self.close()
            raise

    def fingerprints(self) -> tuple[list[int], list[str]]:
        """Every chunk of a ready source as of the copy: ids ascending, content hashes."""
        rows = self._conn.execute(
            "SELECT c.id, c.content_hash FROM chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE s.state = 'ready' ORDER BY c.id").fetchall()
        return [r[0] for r in rows], [r[1] or "" for r in rows]

    def counts(self) -> dict[str, Any]:
        """Ready sources (a transcript once, as ``status`` counts them) and their chunks as
        of the copy, and the model that made them."""
        sources, chunks = self._conn.execute(
            f"SELECT count(*) - ({EXTRA_SEGMENTS}), coalesce(sum(n_chunks), 0) FROM sources "
            "WHERE state = 'ready'").fetchone()
        meta = dict(self._conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dim')"
        ).fetchall())
        return {"sources": int(sources), "chunks": int(chunks),
                "model": meta.get("embedding_model"), "dim": int(meta.get("embedding_dim") or 0),
                "chunk_version": self.chunk_version}

    def copy_to(self, target: Path, step: Callable[[int, int], None] | None = None) -> None:
        """Copy the vault as of the transaction into a new file ``target`` (same key).
        ``step(done_pages, total_pages)`` after each step; what it raises stops the copy."""
        dest = sqlite.connect(str(target), isolation_level=None)
        quiet(dest)
        try:
            dest.execute(f"PRAGMA key = \"x'{self._hexkey}'\"")
            dest.execute("PRAGMA journal_mode = OFF")  # a new file: nothing to roll back to

            def progress(status: int, remaining: int, total: int) -> None:
                if step is not None:
                    step(total - remaining, total)
            self._conn.backup(dest, pages=STEP, progress=progress)
        except sqlite.DatabaseError as exc:
            raise store_error(exc) from None
        finally:
            dest.close()

    def close(self) -> None:
        with suppress(sqlite.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        with suppress(sqlite.Error):
            self._conn.close()
