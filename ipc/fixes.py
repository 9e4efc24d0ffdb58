"""What to do about an engine error, said to an agent's user (the SessionStart hook's
systemMessage, the MCP tools' errors): one hint per error name, no user text."""

from __future__ import annotations

from engine import CtxError

__all__ = ["FIXES", "fix_for"]

FIXES = {
    "key_unavailable": "the agent's environment cannot unlock the store. Start the ctx app or "
                       "`ctx serve` in your own shell (the agent then uses it), or set "
                       "CTX_PASSPHRASE or CTX_KEY_FILE for the agent",
    "wrong_key": "the key in the agent's environment does not open the store: fix "
                 "CTX_PASSPHRASE or CTX_KEY_FILE (or start the ctx app or `ctx serve` in "
                 "your own shell, and the agent uses it)",
    "store_locked": "another ctx process holds the store; memory comes back when it ends",
    "store_not_initialized": "no ctx store yet: run `ctx init`",
    "ipc_timeout": "the engine did not answer within 2 s (busy?); check `ctx status`",
    "server_unavailable": "the engine could not be reached; check `ctx status` and the "
                          "engine log (logs/engine.log in the data dir)",
    "config_invalid": "ctx's config.toml has an error; run `ctx status` to see it",
}


# The errors whose fix may be a passphrase in the default key file.
_KEY_ERRORS = ("key_unavailable", "wrong_key")


def fix_for(exc: CtxError) -> str:
    """What to do about ``exc``: its hint, or where to look for errors without one. A key
    error's hint also names the default key file, which ctx reads by itself."""
    fix = FIXES.get(exc.name, f"{exc.name}: run `ctx status` to see why")
    if exc.name in _KEY_ERRORS:
        from engine import default_key_file

        fix += f" (or put the passphrase in {default_key_file()}, readable by you alone)"
    return fix
