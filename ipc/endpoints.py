"""Which endpoints a ctx server may bind: this machine's loopback, or a local socket.

The connection key is a bearer secret and the wire carries the user's text in
the clear, so a server never listens on a network interface. Allowed:
``ipc://<path>`` and ``tcp://<host>:<port>`` where host is ``localhost``, an
IPv4 address in 127.0.0.0/8 or ``[::1]``; the port is a number or ``*`` (a
free port). Everything else (``tcp://*:*``, ``tcp://0.0.0.0:5555``, an
interface name such as ``eth0``, another transport) is a ``config_invalid``
(1001) error with ``details.key == "ipc.endpoint"`` and
``details.reason == "not_loopback"`` (or ``"malformed"``).
"""

from __future__ import annotations

import ipaddress
import re

from engine import ConfigError

__all__ = ["LOOPBACK_NAMES", "check_loopback", "is_loopback_host", "needs_ipv6"]

LOOPBACK_NAMES = ("localhost",)
_TCP = re.compile(r"^tcp://(?P<host>\[[^\]]*\]|[^:/\[\]]*):(?P<port>\*|\d{1,5})$")


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (with or without brackets)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


def _refuse(reason: str, why: str) -> ConfigError:
    return ConfigError(f"ipc.endpoint: {why}", key="ipc.endpoint", reason=reason)


def check_loopback(endpoint: str) -> str:
    """``endpoint`` unchanged if a server may bind it; ConfigError (1001) otherwise.

    The message names the rule, not the endpoint given.
    """
    if not isinstance(endpoint, str):
        raise _refuse("malformed", "expected a string")
    if endpoint.startswith("ipc://"):
        if len(endpoint) == len("ipc://"):
            raise _refuse("malformed", "ipc:// needs a socket path")
        return endpoint
    if not endpoint.startswith("tcp://"):
        raise _refuse("malformed", "must start with ipc:// or tcp://")
    match = _TCP.match(endpoint)
    if match is None:
        raise _refuse("malformed", "expected tcp://HOST:PORT (PORT a number or *)")
    if not is_loopback_host(match["host"]):
        raise _refuse("not_loopback", "a ctx server binds loopback only "
                      "(127.0.0.0/8, [::1], localhost) or an ipc:// socket")
    if match["port"].isdigit() and not 0 < int(match["port"]) < 65536:
        raise _refuse("malformed", "the port must be between 1 and 65535")
    return endpoint


def needs_ipv6(endpoint: str) -> bool:
    """Whether ``endpoint`` is an IPv6 literal (``tcp://[::1]:*``): ZeroMQ binds and
    connects such an address only on a socket with its IPV6 option set."""
    return endpoint.startswith("tcp://[")
