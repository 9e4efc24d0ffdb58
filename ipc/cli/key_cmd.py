"""`ctx key ...`: how the data key is kept, changed without touching the data.

- ``recovery``: a new recovery key (printed once; the old one stops working);
- ``passphrase``: a new passphrase;
- ``use-keychain`` / ``use-passphrase``: keep the key in the OS keychain, or under a
  passphrase (``use-keychain`` with the recovery key also puts a lost keychain entry back);
- ``rotate``: a new data key. With the background engine running, the engine does it as
  a job (kind "rotate") that this command follows, reads going on meanwhile; with none
  (or ``--stop``, which stops it first), here with the store closed.

To unlock, each takes the current passphrase (CTX_PASSPHRASE, or a prompt), the
keychain, or the recovery key (``--recovery-key-stdin`` or CTX_RECOVERY_KEY). A new
passphrase is asked twice on a terminal, or read with ``--new-passphrase-stdin``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from engine import InvalidInput, KeyUnavailable
from ipc.cli.keep_cmd import StdinSecrets, ask, headless_key, recovery_from
from ipc.cli.output import emit_json

MIN_PASSPHRASE = 10
RECOVERY_NOTE = """\
Your recovery key (shown this once; ctx keeps no copy):

    {key}

Write it down, or keep it in a password manager, somewhere other than this computer.
It unlocks this store by itself when the OS keychain or the passphrase is lost, and
it opens backups taken from now on (`ctx restore --recovery-key-stdin`, or
CTX_RECOVERY_KEY). Anyone who has it can read the store. `ctx key recovery` makes a
new one; this one then stops opening the store.
"""


def print_recovery_key(key: str) -> None:
    sys.stdout.write("\n" + RECOVERY_NOTE.format(key=key) + "\n")
    sys.stdout.flush()


def add_key_parser(sub: Any) -> None:
    s = sub.add_parser("key", help="recovery key, passphrase, keychain, key rotation")
    ks = s.add_subparsers(dest="key_cmd", required=True, metavar="ACTION")
    for name, text in (
            ("recovery", "make a new recovery key (the old one stops working)"),
            ("passphrase", "change the passphrase"),
            ("use-keychain", "keep the data key in the OS keychain"),
            ("use-passphrase", "keep the data key under a passphrase"),
            ("rotate", "a new data key: the vault rekeyed, the vectors sealed again")):
        a = ks.add_parser(name, help=text)
        a.add_argument("--recovery-key-stdin", action="store_true",
                       help="unlock with the recovery key, read from standard input")
        if name in ("passphrase", "use-passphrase"):
            a.add_argument("--new-passphrase-stdin", action="store_true",
                           help="read the new passphrase from standard input (after the "
                                "recovery key, if both)")
        if name == "rotate":
            a.add_argument("--stop", action="store_true",
                           help="stop the background engine first and rotate with the "
                                "store closed (by default the running engine rotates it "
                                "while it goes on answering reads)")
        a.add_argument("--json", action="store_true")
    s.set_defaults(handler=run_key)


def _new_passphrase(args: argparse.Namespace, secrets: StdinSecrets) -> str:
    if getattr(args, "new_passphrase_stdin", False):
        new = secrets.line("new passphrase")
    elif sys.stdin is not None and sys.stdin.isatty():
        new = getpass.getpass("new passphrase: ")
        if new != getpass.getpass("again: "):
            raise InvalidInput("the passphrases differ", field="passphrase")
    else:
        raise InvalidInput("a new passphrase is needed: --new-passphrase-stdin, or run it "
                           "on a terminal", field="passphrase")
    if len(new) < MIN_PASSPHRASE:
        raise InvalidInput(f"the new passphrase is too short (at least {MIN_PASSPHRASE} "
                           "characters)", field="passphrase")
    return new


def run_key(args: argparse.Namespace) -> int:
    from engine import (
        change_passphrase,
        renew_recovery_key,
        rotate_key,
        use_keychain,
        use_passphrase,
    )

    secrets = StdinSecrets()
    recovery = recovery_from(args, secrets)
    new = _new_passphrase(args, secrets) if args.key_cmd in ("passphrase",
                                                            "use-passphrase") else None
    unlock: dict[str, Any] = {"recovery_key": recovery}

    def attempt(fn: Any, *a: Any) -> Any:
        try:
            return fn(args.data_dir, *a, **unlock)
        except KeyUnavailable:
            typed = None if recovery or headless_key() else ask("current passphrase: ")
            if typed is None:
                raise
            unlock["passphrase"] = typed
            return fn(args.data_dir, *a, **unlock)

    cmd = args.key_cmd
    if cmd == "recovery":
        result = attempt(renew_recovery_key)
    elif cmd == "passphrase":
        result = attempt(change_passphrase, new)
    elif cmd == "use-passphrase":
        result = attempt(use_passphrase, new)
    elif cmd == "use-keychain":
        result = attempt(use_keychain)
    else:
        from ipc.cli.long_cmd import rotate_online, with_store_closed

        result = None if args.stop or args.local else rotate_online(args, attempt)
        if isinstance(result, int):
            return result  # the user stopped waiting: the rotation goes on
        if result is None:
            result = with_store_closed(args, lambda: attempt(rotate_key))
    if args.json:
        out = result.to_dict()
        emit_json(out)
        return 0
    said = {"recovery": "a new recovery key was made; the previous one no longer opens "
                        "this store",
            "passphrase": "the passphrase was changed",
            "use-passphrase": "the data key is now kept under your passphrase",
            "use-keychain": "the data key is now kept in the OS keychain",
            "rotate": f"a new data key ({result.key_id}) replaced {result.old_key_id}: the "
                      "vault was rekeyed and the vectors sealed again; backups taken before "
                      "still open with the passphrase or recovery key of their day"}[cmd]
    print(said)
    if result.recovery_key:
        print_recovery_key(result.recovery_key)
    return 0
