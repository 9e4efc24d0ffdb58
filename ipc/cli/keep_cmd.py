"""`ctx backup`, `ctx restore`, `ctx export`: the user's data out of the store and back.

Secrets come from standard input, one per line in the order the flags are
listed (``--recovery-key-stdin``, then ``--new-passphrase-stdin``), from the
environment (``CTX_PASSPHRASE``, ``CTX_RECOVERY_KEY``), or from a prompt on a
terminal; never from an argument (it would show in the process list).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time
from pathlib import Path
from typing import Any

from engine import InvalidInput
from ipc.cli.backend import open_backend
from ipc.cli.output import emit_json, emit_result, fmt_bytes, fmt_time
from ipc.cli.progress import StatusLine, while_watching

EXPORT_WARNING = (
    "ctx export writes your sources as PLAINTEXT to {path}: there they leave ctx's "
    "encryption, and anyone who can read that {what} can read them (backups, sync "
    "folders and other users included). Delete it when you no longer need it.")


class StdinSecrets:
    """Secrets read from standard input, one line each, in the order they are asked for."""

    def line(self, what: str) -> str:
        text = sys.stdin.readline().rstrip("\r\n")
        if not text:
            raise InvalidInput(f"{what}: nothing on standard input", field=what)
        return text


def recovery_from(args: argparse.Namespace, secrets: StdinSecrets) -> str | None:
    if getattr(args, "recovery_key_stdin", False):
        return secrets.line("recovery key")
    return os.environ.get("CTX_RECOVERY_KEY") or None


def ask(prompt: str) -> str | None:
    """A secret typed at a terminal (None without one, or when left empty)."""
    if sys.stdin is None or not sys.stdin.isatty():
        return None
    return getpass.getpass(prompt) or None


def headless_key() -> bool:
    from engine import headless_key_available

    return headless_key_available()


def add_keep_parsers(sub: Any) -> None:
    s = sub.add_parser("backup", help="write one encrypted backup file of the store "
                                      "(or check one with --verify)")
    s.add_argument("path", metavar="PATH", help="the backup file (a folder: a dated name in it)")
    s.add_argument("--verify", action="store_true",
                   help="check the backup at PATH whole, without restoring it")
    s.add_argument("--no-vectors", action="store_true",
                   help="leave the vector index out (a restore rebuilds it from the vault)")
    s.add_argument("--recovery-key-stdin", action="store_true",
                   help="with --verify: read the backup's recovery key from standard input")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=cmd_backup)

    s = sub.add_parser("restore", help="restore a backup into a data dir (a new one, or "
                                       "--replace the store it was taken from)")
    s.add_argument("path", metavar="PATH")
    s.add_argument("--data-dir", default=argparse.SUPPRESS,
                   help="where to restore (default: --data-dir before the command, "
                        "$CTX_HOME or the user data dir)")
    s.add_argument("--replace", action="store_true",
                   help="put the backup in place of the store there (kept aside, renamed)")
    s.add_argument("--recovery-key-stdin", action="store_true",
                   help="read the recovery key from standard input (else CTX_RECOVERY_KEY, "
                        "CTX_PASSPHRASE, or a prompt)")
    s.add_argument("--new-passphrase-stdin", action="store_true",
                   help="a passphrase for the restored store, when the backup's key was in a "
                        "keychain and this machine has none")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=cmd_restore)

    s = sub.add_parser("export", help="write the sources as PLAINTEXT files (they leave the "
                                      "encryption)")
    s.add_argument("path", metavar="PATH",
                   help="a new file (jsonl) or a new or empty folder (markdown)")
    s.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    s.add_argument("--kind", help="only sources of this kind (document, code, text, "
                                  "conversation, transcript)")
    s.add_argument("--project", help="only the sources of this project")
    s.add_argument("--yes", action="store_true",
                   help="do not ask: the plaintext warning is understood (needed without a "
                        "terminal)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=cmd_export)


# -- backup -------------------------------------------------------------------------------

class ByteProgress(StatusLine):
    """A backup's progress on stderr: bytes done of bytes in all (redrawn on a terminal,
    a line every few seconds otherwise)."""

    def __init__(self, what: str) -> None:
        super().__init__(sys.stderr)
        self.what = what
        self._last = 0.0

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if total <= 0 or now - self._last < (0.2 if self.tty else 5.0):
            return  # nothing to say until the size is known (never "0 B of 0 B")
        self._last = now
        pct = 100.0 * done / total if total else 0.0
        self.draw(f"{self.what}: {fmt_bytes(done)} of {fmt_bytes(total)} ({pct:.0f}%)", 70)


def _watch(backend: Any, kind: str, call: Any) -> Any:
    """Run ``call()`` on a thread while drawing the progress of its job (``kind``)."""
    bar = ByteProgress(kind.replace("_", " "))
    try:
        return while_watching(backend, kind, call,
                              lambda job: bar.update(job.bytes, job.bytes_total))
    finally:
        bar.close()


def _show_backup(result: Any, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    done = "checked: whole and authentic" if result.verified else "written"
    print(f"backup {done}: {result.path}")
    print(f"  {fmt_bytes(result.bytes)}, taken {fmt_time(result.created)} UTC; "
          f"{result.sources} sources, {result.chunks} chunks, {result.vectors} vectors")
    print(f"  store {result.store_id}, data key {result.key_id}")


def cmd_backup(args: argparse.Namespace) -> int:
    path = str(Path(args.path).expanduser().resolve())
    if args.verify:
        return _verify(args, path)
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        result = _watch(backend, "backup", lambda: backend.backup(
            path, include_vectors=False if args.no_vectors else None))
    finally:
        backend.close()
    _show_backup(result, args.json)
    return 0


def _verify(args: argparse.Namespace, path: str) -> int:
    """With a secret given: alone (no store needed). Else with the store's own key."""
    from engine import probe_store, verify_backup_file

    secrets = StdinSecrets()
    recovery = recovery_from(args, secrets)
    probe = probe_store(args.data_dir)
    if recovery or not probe.exists:
        passphrase = None if recovery or headless_key() else ask("backup passphrase: ")
        result = verify_backup_file(path, passphrase=passphrase, recovery_key=recovery)
    else:
        backend = open_backend(args.data_dir, local_only=args.local)
        try:
            result = _watch(backend, "verify_backup", lambda: backend.verify_backup(path))
        finally:
            backend.close()
    _show_backup(result, args.json)
    return 0


# -- restore ------------------------------------------------------------------------------

def cmd_restore(args: argparse.Namespace) -> int:
    from engine import restore_backup

    secrets = StdinSecrets()
    recovery = recovery_from(args, secrets)
    new_pass = secrets.line("new passphrase") if args.new_passphrase_stdin else None
    passphrase = None
    if not recovery and not headless_key():
        passphrase = ask("the backup's passphrase (or its recovery key): ")
    bar = ByteProgress("restore")
    try:
        result = restore_backup(args.path, args.data_dir, passphrase=passphrase,
                                recovery_key=recovery, replace=args.replace,
                                new_passphrase=new_pass, progress=bar.update)
    finally:
        bar.close()
    if args.json:
        emit_json(result.to_dict())
        return 0
    print(f"restored into {result.data_dir}: {result.sources} sources, {result.chunks} "
          f"chunks (backup taken {fmt_time(result.created)} UTC)")
    if result.replaced:
        print(f"the store it replaced was moved to {result.replaced}; delete it once the "
              "restored one works")
    print("it opens with the passphrase and the recovery key that were in force when the "
          "backup was taken")
    return 0


# -- export -------------------------------------------------------------------------------

def cmd_export(args: argparse.Namespace) -> int:
    path = Path(args.path).expanduser().resolve()
    what = "file" if args.format == "jsonl" else "folder"
    print("WARNING: " + EXPORT_WARNING.format(path=path, what=what), file=sys.stderr)
    if not args.yes:
        if sys.stdin is None or not sys.stdin.isatty():
            raise InvalidInput("ctx export writes plaintext: add --yes to confirm (no "
                               "terminal to ask on)", field="yes")
        answer = input("Write the plaintext export? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing written", file=sys.stderr)
            return 1
    backend = open_backend(args.data_dir, local_only=args.local)
    try:
        result = backend.export(str(path), fmt=args.format, kind=args.kind,
                                project=args.project)
    finally:
        backend.close()
    emit_result(result, args.json, f"exported {result.sources} sources ({result.chunks} "
                f"chunks, {fmt_bytes(result.bytes)}) as {result.format} to {result.path}")
    return 0
