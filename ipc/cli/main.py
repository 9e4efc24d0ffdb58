"""`ctx`: ingest, search, build, recall, sources, delete, compact, status, stop, init, serve, app,
audit, mcp, hook,
uninstall-integrations, backup, restore, export, key.

Exit codes: 0 ok, 2 usage, 3 not found, 4 locked or wrong key, 1 other.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from engine import UPGRADE_LOGGER, CtxError, InvalidInput, caller
from ipc.cli import commands, long_cmd
from ipc.cli.backend import stop_command
from ipc.exit_codes import exit_code


def _parser() -> argparse.ArgumentParser:
    from ipc.version import version

    p = argparse.ArgumentParser(prog="ctx", description="Local context engine.")
    # the same answer as the app bundle's launcher (packaging/launcher.py)
    p.add_argument("--version", action="version", version=f"ctx {version()}")
    p.add_argument("--data-dir", help="data directory (default: $CTX_HOME or the user data dir)")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr (no content)")
    p.add_argument("--local", action="store_true",
                   help="open the store in this process instead of using or starting the "
                        "background engine")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("init", help="create the store and its key")
    s.add_argument("--passphrase-stdin", action="store_true",
                   help="read the passphrase from standard input instead of the keychain")
    s.add_argument("--no-keychain", action="store_true", help="use a passphrase, not the keychain")

    s = sub.add_parser("ingest", help="ingest files, folders, or '-' for standard input")
    s.add_argument("paths", nargs="+", metavar="PATH")
    s.add_argument("--title", help="title for text from standard input")
    s.add_argument("--no-wait", action="store_true", help="queue the job and print its id")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("search", help="hybrid search of the store")
    s.add_argument("query")
    s.add_argument("-k", type=int, default=10)
    s.add_argument("--kind", action="append", help="source or chunk kind (repeatable)")
    s.add_argument("--path", help="only sources under this path (a relative one is from the "
                                  "current folder, as ctx ingest takes it)")
    s.add_argument("--since")
    s.add_argument("--until")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("build", help="build a context payload within a token budget")
    s.add_argument("query")
    s.add_argument("--budget", type=int, default=1500)
    s.add_argument("--live", help="JSON file with live context items")
    s.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    s.add_argument("--mode", choices=("fast", "dense_cached"))
    s.add_argument("--now", help="fixed 'now' (ISO or epoch) for a deterministic payload")

    s = sub.add_parser("sources", help="list stored sources")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("delete", help="delete a source (id, path or uri)")
    s.add_argument("source")
    s.add_argument("--no-wait", action="store_true",
                   help="start the delete and print its job id (`ctx status` follows it)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=long_cmd.cmd_delete)

    s = sub.add_parser("compact", help="give back the space deleted sources took")
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=long_cmd.cmd_compact)

    s = sub.add_parser("stop", help="stop the background engine of this data dir")
    s.set_defaults(handler=long_cmd.cmd_stop)

    s = sub.add_parser("status", help="store and engine status")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("audit", help="read the audit log (ids and counts, no content)")
    s.add_argument("--since")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("recall", help="memory of coding sessions (Claude Code, Codex)")
    s.add_argument("query", nargs="?")
    s.add_argument("--index", metavar="DIR", action="append", help="add a transcript folder")
    s.add_argument("--sync", action="store_true", help="ingest what is new since the last sync")
    s.add_argument("--forget-folder", metavar="DIR", action="append",
                   help="stop syncing a folder added with --index (one deleted, say)")
    s.add_argument("--auto", action="store_true", help="recent + related + failures")
    s.add_argument("--project", help="the project whose sessions rank first (default: the "
                                     "current folder's; the others still follow)")
    s.add_argument("--branch")
    s.add_argument("--since")
    s.add_argument("--type", help="turn_pair,thinking,code,tool (code: the sessions' code "
                                  "blocks)")
    s.add_argument("-k", type=int, default=10)
    s.add_argument("--budget", type=int,
                   help="tokens: the --auto digest's budget (default: the config's "
                        "recall.auto_budget); with a QUERY, the hits' excerpts are sized "
                        "to fill it (default: recall.hit_excerpt_tokens each)")
    s.add_argument("--task")
    s.add_argument("--format", choices=("context", "markdown", "json", "claude-hook"),
                   default="context")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("repair", help="rebuild the vectors from the vault (set aside a "
                                      "damaged vectors/); the store must not be in use")
    s.add_argument("--stop", action="store_true",
                   help="stop the background engine first if it has the store open")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("app", help="start the desktop tray app, or talk to the running one")
    s.add_argument("--ingest", action="append", default=[], metavar="PATH",
                   help="ingest a file or folder in the app (the running one, if any)")
    s.add_argument("--status", action="store_true", help="print the running app's status")
    s.add_argument("--quit", action="store_true", help="ask the running app to quit")
    s.add_argument("--pause", action="store_true", help="pause the running app's ingestion")
    s.add_argument("--resume", action="store_true", help="resume the running app's ingestion")
    s.add_argument("--no-tray", action="store_true", help="use the window, not the tray")

    s = sub.add_parser("serve", help="run the engine headless with the ZeroMQ server")
    s.add_argument("--endpoint", help="ZeroMQ endpoint to bind (default: ipc:// or tcp://127.0.0.1)")
    s.add_argument("--workers", type=int, default=4)
    s.add_argument("--idle-timeout", type=int, default=0, metavar="SECONDS",
                   help="stop after this many seconds without a call (0: never)")
    s.add_argument("--sync-on-start", action="store_true",
                   help="index what is new in the transcript folders once serving")

    s = sub.add_parser("mcp", help="MCP server on stdio for coding agents (Claude Code, Codex)")
    s.add_argument("--budget", type=int, default=2000,
                   help="default token budget of build_context and recall results")

    from ipc.cli.hook_cmd import add_hook_parser
    from ipc.cli.keep_cmd import add_keep_parsers
    from ipc.cli.key_cmd import add_key_parser
    from ipc.cli.uninstall_cmd import add_uninstall_parser

    add_hook_parser(sub)
    add_uninstall_parser(sub)
    add_keep_parsers(sub)
    add_key_parser(sub)
    _globals_after_command(p)
    return p


# The options every command shares, also accepted after the command (`ctx init --data-dir
# DIR` as well as `ctx --data-dir DIR init`); given after it, they win.
_GLOBAL_OPTIONS = (("--data-dir",), ("-v", "--verbose"), ("--local",))


def _globals_after_command(parser: argparse.ArgumentParser) -> None:
    top = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
            for flags in _GLOBAL_OPTIONS:
                if any(f in sub._option_string_actions for f in flags):
                    continue  # the command's own option of that name (restore --data-dir)
                like = top[flags[0]]
                sub.add_argument(*flags, dest=like.dest, help=like.help,
                                 default=argparse.SUPPRESS,
                                 **({"action": "store_true"} if like.nargs == 0 else {}))
            _globals_after_command(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger(UPGRADE_LOGGER).setLevel(logging.INFO)  # a long first open says why
    handler = getattr(args, "handler", None) or getattr(commands, "cmd_" + args.cmd)
    try:
        with caller("cli", pid=os.getpid()):  # what the engine audits of a store opened here
            return int(handler(args) or 0)
    except CtxError as exc:
        data_dir = getattr(args, "data_dir", None)
        if (exc.name == "store_locked" and args.cmd != "serve"
                and stop_command(data_dir) not in exc.message):
            exc.message += long_cmd.holder_hint(data_dir)
        _report(exc, getattr(args, "json", False), serve=args.cmd == "serve")
        return exit_code(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _report(exc: CtxError, as_json: bool, serve: bool = False) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": exc.to_dict()}) + "\n")
    if serve:  # what a process that started this engine in the background reads back
        sys.stderr.write(json.dumps({"error": exc.to_dict()}) + "\n")
    sys.stderr.write(f"ctx: error [{exc.name}]: {exc.message}\n")


def run(argv: Sequence[str]) -> Any:  # pragma: no cover - convenience for `python -m`
    raise SystemExit(main(argv))


__all__ = ["InvalidInput", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
