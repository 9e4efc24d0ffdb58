"""The keys config section ([keys]): the passphrase KDF's cost."""

from __future__ import annotations

from dataclasses import dataclass

from engine.config_base import bounded, check_bounds
from engine.errors import ConfigError


@dataclass(frozen=True)
class KeyConfig:
    """Passphrase KDF cost (scrypt, memory-hard): n must be a power of two."""

    scrypt_n: int = bounded(2**15, 2**10)
    scrypt_r: int = bounded(8, 1, 64)
    scrypt_p: int = bounded(1, 1, 16)

    def __post_init__(self) -> None:
        check_bounds(self, "keys")
        if self.scrypt_n & (self.scrypt_n - 1):
            raise ConfigError("keys.scrypt_n must be a power of two >= 1024", key="keys.scrypt_n")
