"""The exit status of a ctx process (``ctx``, ``ctx serve``) that ends on an error: the
command line's concern, so it lives here and not on the engine's errors, which only carry
their stable code and name (docs/cli.md lists the statuses)."""

from __future__ import annotations

from engine import CtxError

# Error name -> exit status. An error not named here takes the status of its nearest base
# class that is (EmptyQuery an InvalidInput's 2, VaultDamaged a StoreDamaged's 4), else 1.
EXIT_CODES: dict[str, int] = {
    "config_invalid": 2, "invalid_input": 2,  # usage: the input or the config is wrong
    "not_found": 3,
    "store_locked": 4, "wrong_key": 4, "key_unavailable": 4, "store_not_initialized": 4,
    "store_damaged": 4, "store_exists": 4,  # the store cannot be used as asked
    "no_space": 1,
    "ipc_timeout": 5, "server_unavailable": 5, "key_mismatch": 5,  # the engine did not answer
}


def exit_code(exc: CtxError) -> int:
    """The exit status for ``exc`` (see ``EXIT_CODES``)."""
    for cls in type(exc).__mro__:
        name = vars(cls).get("name")
        if isinstance(name, str) and name in EXIT_CODES:
            return EXIT_CODES[name]
    return 1
