"""The data key: 256 random bits, created once, kept wrapped.

Wrapping, in order of preference:
- ``keychain``: the OS keychain (``keyring``) holds the key itself;
- ``passphrase``: AES-256-GCM under a key derived with scrypt (memory-hard)
  from a passphrase, given by the caller or, headless, by ``CTX_PASSPHRASE`` or
  ``CTX_KEY_FILE`` (a file readable by its owner alone).

``key.json`` in the data dir records the method and the wrapped key (never
the key in clear). A wrong passphrase fails the GCM tag check: a clear
``WrongKey`` error, and nothing on disk changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine.crypto.config import KeyConfig
from engine.errors import (
    ConfigError,
    KeyRecordDamaged,
    KeyUnavailable,
    StoreNotInitialized,
    WrongKey,
)
from engine.paths import keyfile_path

log = logging.getLogger("ctx.keys")

KEYRING_SERVICE = "ctx"
ENV_PASSPHRASE = "CTX_PASSPHRASE"
ENV_KEY_FILE = "CTX_KEY_FILE"
Method = Literal["keychain", "passphrase"]


@dataclass(frozen=True)
class KeyRecord:
    version: int
    method: Method
    key_id: str  # sha256 of the key, first 16 hex: tells stores apart, reveals nothing
    salt: str = ""
    nonce: str = ""
    wrapped: str = ""
    scrypt_n: int = 0
    scrypt_r: int = 0
    scrypt_p: int = 0


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"ctx-key-id" + key).hexdigest()[:16]


def _kek(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * 1024 * 1024, dklen=32)


def headless_passphrase() -> str | None:
    """The passphrase from ``CTX_PASSPHRASE`` or an owner-only ``CTX_KEY_FILE``."""
    env = os.environ.get(ENV_PASSPHRASE)
    if env:
        return env
    path = os.environ.get(ENV_KEY_FILE)
    if not path:
        return None
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise KeyUnavailable(f"{ENV_KEY_FILE} is not readable: {path}") from exc
    if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyUnavailable(f"{ENV_KEY_FILE} must be readable by its owner alone (chmod 600)")
    log.warning("data key unlocked from a key file: for headless use only")
    return p.read_text(encoding="utf-8").strip()


def _keychain_account(root: Path) -> str:
    return "data-key:" + hashlib.sha256(str(root).encode()).hexdigest()[:24]


def keychain_available() -> bool:
    """True when an OS keychain backend (keyring) is usable here."""
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        return not isinstance(backend, fail.Keyring) and backend.priority > 0
    except Exception:  # noqa: BLE001 - any backend failure means "no keychain"
        return False


_DAMAGED = "key.json is damaged ({what}): restore it from a backup of this store"


def read_record(root: Path) -> KeyRecord | None:
    """The store's key record, checked field by field (KeyRecordDamaged names the field)."""
    path = keyfile_path(root)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise KeyRecordDamaged(_DAMAGED.format(what=exc.strerror or "unreadable")) from None
    except (ValueError, UnicodeDecodeError):
        raise KeyRecordDamaged(_DAMAGED.format(what="not JSON")) from None
    if not isinstance(data, dict):
        raise KeyRecordDamaged(_DAMAGED.format(what="not a JSON object"))
    try:
        record = KeyRecord(**data)
    except TypeError:
        raise KeyRecordDamaged(_DAMAGED.format(what="unknown or missing fields")) from None
    _check_record(record)
    return record


def _check_record(r: KeyRecord) -> None:
    def bad(what: str) -> KeyRecordDamaged:
        return KeyRecordDamaged(_DAMAGED.format(what=what))

    if r.version != 1:
        raise bad(f"version {r.version!r} is not 1")
    if r.method not in ("keychain", "passphrase"):
        raise bad("unknown wrapping method")
    if not isinstance(r.key_id, str) or len(r.key_id) != 16 \
            or any(c not in "0123456789abcdef" for c in r.key_id):
        raise bad("key_id")
    if r.method == "keychain":
        return
    for name, size in (("salt", 16), ("nonce", 12), ("wrapped", 48)):
        value = getattr(r, name)
        try:
            raw = _unb64(value) if isinstance(value, str) else None
        except (ValueError, UnicodeEncodeError):
            raw = None
        if raw is None or len(raw) != size:
            raise bad(f"{name} is not valid base64 of {size} bytes")
    n, rr, p = r.scrypt_n, r.scrypt_r, r.scrypt_p
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, rr, p)) \
            or not (1024 <= n <= 2 ** 24 and n & (n - 1) == 0) or not 1 <= rr <= 64 \
            or not 1 <= p <= 16 or 128 * n * rr > 256 * 1024 * 1024:
        raise bad("scrypt parameters out of range")


def _write_record(root: Path, record: KeyRecord) -> None:
    path = keyfile_path(root)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record.__dict__, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def create_key(root: Path, cfg: KeyConfig, *, passphrase: str | None = None,
               use_keychain: bool | None = None) -> bytes:
    """Create and store a new wrapped data key for a new store; returns the key."""
    if read_record(root) is not None:
        raise ConfigError("a data key already exists for this data dir")
    key = secrets.token_bytes(32)
    if passphrase is None and use_keychain is not False and keychain_available():
        import keyring

        keyring.set_password(KEYRING_SERVICE, _keychain_account(root), _b64(key))
        _write_record(root, KeyRecord(version=1, method="keychain", key_id=key_id(key)))
        return key
    if passphrase is None:
        passphrase = headless_passphrase()
    if not passphrase:
        raise KeyUnavailable(
            "no keychain and no passphrase to make the store's key: run `ctx init` on a "
            "terminal, `ctx init --passphrase-stdin`, or set CTX_PASSPHRASE or CTX_KEY_FILE "
            "(a file readable by you alone); later commands unlock it the same way")
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    kek = _kek(passphrase, salt, cfg.scrypt_n, cfg.scrypt_r, cfg.scrypt_p)
    wrapped = AESGCM(kek).encrypt(nonce, key, b"ctx-data-key-v1")
    _write_record(root, KeyRecord(
        version=1, method="passphrase", key_id=key_id(key), salt=_b64(salt), nonce=_b64(nonce),
        wrapped=_b64(wrapped), scrypt_n=cfg.scrypt_n, scrypt_r=cfg.scrypt_r, scrypt_p=cfg.scrypt_p,
    ))
    return key


def unlock_key(root: Path, *, passphrase: str | None = None) -> bytes:
    """Unwrap the data key of an existing store. Never creates or changes anything."""
    record = read_record(root)
    if record is None:
        raise StoreNotInitialized(f"no store at {root}: run `ctx init`")
    if record.method == "keychain":
        try:
            import keyring

            secret = keyring.get_password(KEYRING_SERVICE, _keychain_account(root))
        except Exception as exc:
            raise KeyUnavailable("the OS keychain is not reachable") from exc
        if not secret:
            raise KeyUnavailable("the data key is missing from the OS keychain")
        try:
            key = _unb64(secret)
        except ValueError:
            raise KeyUnavailable("the data key in the OS keychain is damaged") from None
    else:
        if passphrase is None:
            passphrase = headless_passphrase()
        if not passphrase:
            raise KeyUnavailable("this store is locked by a passphrase: give it or set "
                                 "CTX_PASSPHRASE")
        kek = _kek(passphrase, _unb64(record.salt), record.scrypt_n, record.scrypt_r,
                   record.scrypt_p)
        try:
            key = AESGCM(kek).decrypt(_unb64(record.nonce), _unb64(record.wrapped),
                                      b"ctx-data-key-v1")
        except InvalidTag:
            raise WrongKey("wrong passphrase for this store") from None
    if key_id(key) != record.key_id:
        raise WrongKey("the unlocked key does not belong to this store")
    return key


def derive(key: bytes, label: str, length: int = 32) -> bytes:
    """A subkey for one purpose (vault, rotation, name hashing), via HKDF-SHA256."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"ctx-v1",
                info=label.encode()).derive(key)
