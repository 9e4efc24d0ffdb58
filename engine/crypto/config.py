"""The keys config section ([keys]): the passphrase KDF's cost."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import ConfigError


@dataclass(frozen=True)
class KeyConfig:
    """Passphrase KDF cost (scrypt, memory-hard): n must be a power of two."""

    scrypt_n: int = 2**15
    scrypt_r: int = 8
    scrypt_p: int = 1

    def __post_init__(self) -> None:
        if self.scrypt_n < 2**10 or self.scrypt_n & (self.scrypt_n - 1):
            raise ConfigError("keys.scrypt_n must be a power of two >= 1024", key="keys.scrypt_n")
        if not 1 <= self.scrypt_r <= 64:
            raise ConfigError("keys.scrypt_r must be between 1 and 64", key="keys.scrypt_r")
        if not 1 <= self.scrypt_p <= 16:
            raise ConfigError("keys.scrypt_p must be between 1 and 16", key="keys.scrypt_p")
