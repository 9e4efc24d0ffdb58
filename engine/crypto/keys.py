"""The data key: 256 random bits, created once, kept wrapped.

Wrapping, in order of preference:
- ``keychain``: the OS keychain (``keyring``) holds the key itself;
- ``passphrase``: AES-256-GCM under a key derived with scrypt (memory-hard)
  from a passphrase, given by the caller or, headless, by ``CTX_PASSPHRASE`` or
  ``CTX_KEY_FILE`` (a file readable by its owner alone);
- and beside either, a **recovery key** (``engine.crypto.recovery``) that unlocks
  the data key by itself: given as ``recovery_key``, typed where a passphrase is
  asked, or, headless, in ``CTX_RECOVERY_KEY``.

``key.json`` in the data dir records the method, the wrapped key (never the key
in clear), the store's lasting id and, while a key rotation is under way, the
next key's wrappings (``pending``: ``engine.flows.keeping.key_changes`` settles it). A
wrong passphrase fails the GCM tag check: a clear ``WrongKey`` error, and
nothing on disk changes. Writes are atomic (a temporary file, then a rename).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine import paths as P
from engine.crypto import recovery as R
from engine.crypto.config import KeyConfig
from engine.errors import (
    ConfigError,
    KeyRecordDamaged,
    KeyUnavailable,
    StoreNotInitialized,
    WrongKey,
)
from engine.paths import default_key_file, keyfile_path

log = logging.getLogger("ctx.keys")

KEYRING_SERVICE = "ctx"
ENV_PASSPHRASE = "CTX_PASSPHRASE"
ENV_KEY_FILE = "CTX_KEY_FILE"
ENV_RECOVERY_KEY = R.ENV_RECOVERY_KEY
KEY_LOCK = "key.lock"
Method = Literal["keychain", "passphrase"]
_V1_FIELDS = {"version", "method", "key_id", "salt", "nonce", "wrapped", "scrypt_n",
              "scrypt_r", "scrypt_p"}


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
    store_id: str = ""  # the store's lasting id (a key rotation keeps it); "" before v2
    keychain_account: str = ""  # the keychain entry holding the key; "" is v1's name
    recovery: dict[str, str] | None = None  # the key wrapped for the recovery key
    pending: dict[str, Any] | None = None  # the next key's wrappings, while one rotates in
    retired: list[str] = field(default_factory=list)  # keychain entries left to delete

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"ctx-key-id" + key).hexdigest()[:16]


def new_store_id() -> str:
    return secrets.token_hex(8)


def _kek(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * 1024 * 1024, dklen=32)


def key_file() -> tuple[Path, bool] | None:
    """The key file a passphrase is read from, and whether it was named by CTX_KEY_FILE
    (else it is the default key file, ``paths.default_key_file()``, found there). None
    when CTX_KEY_FILE is unset and there is no default key file."""
    named = os.environ.get(ENV_KEY_FILE)
    if named:
        return Path(named), True
    path = default_key_file()
    return (path, False) if path.is_file() else None


def headless_key_available() -> bool:
    """Whether a passphrase is given without a terminal: CTX_PASSPHRASE, CTX_KEY_FILE or
    the default key file."""
    return bool(os.environ.get(ENV_PASSPHRASE)) or key_file() is not None


def headless_key_file() -> str | None:
    """The key file a headless passphrase is read from (CTX_KEY_FILE, else the default
    key file where one exists); None when CTX_PASSPHRASE gives it, or nothing does."""
    if os.environ.get(ENV_PASSPHRASE):
        return None
    found = key_file()
    return str(found[0]) if found is not None else None


def headless_passphrase() -> str | None:
    """The passphrase from ``CTX_PASSPHRASE``, an owner-only ``CTX_KEY_FILE``, or else
    the owner-only default key file (``~/.config/ctx/keyfile``) where one exists."""
    env = os.environ.get(ENV_PASSPHRASE)
    if env:
        return env
    found = key_file()
    if found is None:
        return None
    p, named = found
    what = f"{ENV_KEY_FILE} ({p})" if named else f"the key file {p}"
    try:
        st = p.stat()
    except OSError as exc:
        raise KeyUnavailable(f"{what} is not readable") from exc
    if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyUnavailable(f"{what} must be readable by its owner alone (chmod 600 {p})")
    log.warning("the passphrase is read from a key file: for headless use only")
    return p.read_text(encoding="utf-8").strip()


def key_file_note() -> str:
    """What an error about the key says of the key file: the one that was used, or where
    ctx would look for one."""
    found = key_file()
    if found is None:
        return (f"; or put it in {default_key_file()} (a file readable by you alone), "
                "where ctx looks by itself")
    p, named = found
    return f" (the passphrase was read from {'CTX_KEY_FILE, ' if named else 'the key file '}{p})"


def legacy_account(root: Path) -> str:
    """The keychain entry of a v1 store (named after its folder)."""
    return "data-key:" + hashlib.sha256(str(root).encode()).hexdigest()[:24]


def account_for(store_id: str, kid: str) -> str:
    """The keychain entry of a key: named after the store and the key, not the folder,
    so that a store moved or restored elsewhere finds it, and a new key gets a new one."""
    return f"data-key:{store_id}:{kid}"


def keychain_available() -> bool:
    """True when an OS keychain backend (keyring) is usable here."""
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        return not isinstance(backend, fail.Keyring) and backend.priority > 0
    except Exception:  # noqa: BLE001 - any backend failure means "no keychain"
        return False


def keychain_get(account: str) -> bytes | None:
    """The key in the keychain entry ``account``; None when the entry is missing.
    KeyUnavailable when the keychain cannot be reached or the entry is damaged."""
    try:
        import keyring

        secret = keyring.get_password(KEYRING_SERVICE, account)
    except Exception as exc:
        raise KeyUnavailable("the OS keychain is not reachable") from exc
    if not secret:
        return None
    try:
        return _unb64(secret)
    except ValueError:
        raise KeyUnavailable("the data key in the OS keychain is damaged") from None


def keychain_set(account: str, key: bytes) -> None:
    try:
        import keyring

        keyring.set_password(KEYRING_SERVICE, account, _b64(key))
    except Exception as exc:
        raise KeyUnavailable("the OS keychain refused to store the key") from exc


def keychain_delete(account: str) -> bool:
    """Delete a keychain entry; True when it is gone (or was never there), False when
    the keychain cannot be reached to say."""
    try:
        import keyring

        keyring.delete_password(KEYRING_SERVICE, account)
    except Exception:  # noqa: BLE001 - a missing entry is what we want anyway
        try:
            return keychain_get(account) is None
        except KeyUnavailable:
            return False
    return True


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
    return record_from(data)


def record_from(data: Any) -> KeyRecord:
    """A key record from its JSON form (key.json, or a backup's header), checked."""
    if not isinstance(data, dict):
        raise KeyRecordDamaged(_DAMAGED.format(what="not a JSON object"))
    if data.get("version") == 1 and set(data) - _V1_FIELDS:
        raise KeyRecordDamaged(_DAMAGED.format(what="unknown or missing fields"))
    try:
        record = KeyRecord(**data)
    except TypeError:
        raise KeyRecordDamaged(_DAMAGED.format(what="unknown or missing fields")) from None
    _check_record(record)
    return record


def _check_record(r: KeyRecord) -> None:
    def bad(what: str) -> KeyRecordDamaged:
        return KeyRecordDamaged(_DAMAGED.format(what=what))

    if r.version not in (1, 2):
        raise bad(f"version {r.version!r} is not 1 or 2")
    _check_wraps(r.__dict__, bad)
    if not isinstance(r.store_id, str) or (r.store_id and not _hex(r.store_id, 16)):
        raise bad("store_id")
    if not isinstance(r.retired, list) or not all(isinstance(a, str) for a in r.retired):
        raise bad("retired")
    if r.pending is not None:
        if not isinstance(r.pending, dict) or r.method != r.pending.get("method"):
            raise bad("pending")
        _check_wraps(r.pending, lambda what: bad("pending." + what))


def _hex(text: Any, size: int) -> bool:
    return isinstance(text, str) and len(text) == size and \
        all(c in "0123456789abcdef" for c in text)


def _check_wraps(r: dict[str, Any], bad: Any) -> None:
    """The key's id and its wrappings (method's own, recovery) in ``r`` are well formed."""
    if r.get("method") not in ("keychain", "passphrase"):
        raise bad("unknown wrapping method")
    if not _hex(r.get("key_id"), 16):
        raise bad("key_id")
    if not isinstance(r.get("keychain_account", ""), str):
        raise bad("keychain_account")
    if r.get("recovery") is not None:
        try:
            R.RecoveryWrap.from_dict(r["recovery"])
        except ValueError as exc:
            raise bad(str(exc)) from None
    if r["method"] == "keychain":
        return
    for name, size in (("salt", 16), ("nonce", 12), ("wrapped", 48)):
        value = r.get(name)
        try:
            raw = _unb64(value) if isinstance(value, str) else None
        except (ValueError, UnicodeEncodeError):
            raw = None
        if raw is None or len(raw) != size:
            raise bad(f"{name} is not valid base64 of {size} bytes")
    n, rr, p = r.get("scrypt_n"), r.get("scrypt_r"), r.get("scrypt_p")
    if not (isinstance(n, int) and isinstance(rr, int) and isinstance(p, int)) \
            or any(isinstance(v, bool) for v in (n, rr, p)) \
            or not (1024 <= n <= 2 ** 24 and n & (n - 1) == 0) or not 1 <= rr <= 64 \
            or not 1 <= p <= 16 or 128 * n * rr > 256 * 1024 * 1024:
        raise bad("scrypt parameters out of range")


def write_record(root: Path, record: KeyRecord) -> None:
    """Replace key.json with ``record``, atomically and durably (version 2)."""
    record = dataclasses.replace(record, version=2)
    path = keyfile_path(root)
    tmp = path.with_name("key.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record.to_dict(), fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    P.fsync_path(root)


@contextmanager
def key_lock(root: Path) -> Iterator[None]:
    """One change of key.json at a time (an engine may run meanwhile: it holds its key)."""
    fd = os.open(root / KEY_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.name == "posix":
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def passphrase_wrap(key: bytes, passphrase: str, cfg: KeyConfig) -> dict[str, Any]:
    """The record fields of ``key`` wrapped under ``passphrase`` (a fresh salt and nonce)."""
    if not passphrase:
        raise KeyUnavailable("the passphrase is empty")
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    kek = _kek(passphrase, salt, cfg.scrypt_n, cfg.scrypt_r, cfg.scrypt_p)
    wrapped = AESGCM(kek).encrypt(nonce, key, b"ctx-data-key-v1")
    return {"salt": _b64(salt), "nonce": _b64(nonce), "wrapped": _b64(wrapped),
            "scrypt_n": cfg.scrypt_n, "scrypt_r": cfg.scrypt_r, "scrypt_p": cfg.scrypt_p}


NO_PASSPHRASE: dict[str, Any] = {"salt": "", "nonce": "", "wrapped": "", "scrypt_n": 0, "scrypt_r": 0,
                 "scrypt_p": 0}


def unwrap_passphrase(wraps: dict[str, Any], passphrase: str) -> bytes:
    """The key from a record's (or pending's) passphrase fields; WrongKey when it fails."""
    kek = _kek(passphrase, _unb64(wraps["salt"]), wraps["scrypt_n"], wraps["scrypt_r"],
               wraps["scrypt_p"])
    try:
        return AESGCM(kek).decrypt(_unb64(wraps["nonce"]), _unb64(wraps["wrapped"]),
                                   b"ctx-data-key-v1")
    except InvalidTag:
        raise WrongKey("wrong passphrase for this store") from None


def create_key(root: Path, cfg: KeyConfig, *, passphrase: str | None = None,
               use_keychain: bool | None = None, recovery_key: str | None = None) -> bytes:
    """Create and store a new wrapped data key for a new store; returns the key.
    With ``recovery_key`` (``recovery.new_recovery_key()``), it is wrapped for it too."""
    if read_record(root) is not None:
        raise ConfigError("a data key already exists for this data dir")
    key = secrets.token_bytes(32)
    store_id, kid = new_store_id(), key_id(key)
    rec = R.wrap_for(R.public_key(R.parse_key(recovery_key)), key).to_dict() \
        if recovery_key else None
    if passphrase is None and use_keychain is not False and keychain_available():
        account = account_for(store_id, kid)
        keychain_set(account, key)
        write_record(root, KeyRecord(2, "keychain", kid, store_id=store_id,
                                     keychain_account=account, recovery=rec))
        return key
    if passphrase is None:
        passphrase = headless_passphrase()
    if not passphrase:
        raise KeyUnavailable(
            "no keychain and no passphrase to make the store's key: run `ctx init` on a "
            "terminal, `ctx init --passphrase-stdin`, or set CTX_PASSPHRASE or CTX_KEY_FILE "
            "(a file readable by you alone); later commands unlock it the same way")
    write_record(root, KeyRecord(2, "passphrase", kid, **passphrase_wrap(key, passphrase, cfg),
                                 store_id=store_id, recovery=rec))
    return key


def unlock_key(root: Path, *, passphrase: str | None = None,
               recovery_key: str | None = None) -> bytes:
    """Unwrap the data key of an existing store. Never creates or changes anything."""
    record = read_record(root)
    if record is None:
        raise StoreNotInitialized(f"no store at {root}: run `{P.init_command(root)}`")
    return unlock_wraps(record.__dict__, root, passphrase=passphrase,
                        recovery_key=recovery_key)


def unlock_wraps(wraps: dict[str, Any], root: Path | None, *, passphrase: str | None = None,
                 recovery_key: str | None = None) -> bytes:
    """The key whose wrappings ``wraps`` holds (a record's, its pending key's, or a
    backup's), from: ``recovery_key``; else the keychain or the passphrase (given, or
    headless); else a recovery key typed as the passphrase, or in CTX_RECOVERY_KEY."""
    if recovery_key:
        key = _by_recovery(wraps, recovery_key)
    elif wraps["method"] == "keychain":
        account = wraps.get("keychain_account") or (legacy_account(root) if root else "")
        found = keychain_get(account) if account else None
        key = found if found is not None else _fallback(
            wraps, passphrase, "the data key is missing from the OS keychain")
    else:
        given = passphrase if passphrase is not None else headless_passphrase()
        if given:
            try:
                key = unwrap_passphrase(wraps, given)
            except WrongKey as exc:
                if passphrase is None and not os.environ.get(ENV_PASSPHRASE) \
                        and key_file() is not None:
                    raise WrongKey(f"{exc.message}{key_file_note()}") from None
                if passphrase is None or not R.looks_like_recovery_key(passphrase):
                    raise
                key = _by_recovery(wraps, passphrase)
        else:
            key = _fallback(wraps, None, "this store is locked by a passphrase: give it or "
                                         "set CTX_PASSPHRASE or CTX_KEY_FILE" + key_file_note())
    if key_id(key) != wraps["key_id"]:
        raise WrongKey("the unlocked key does not belong to this store")
    return key


def _fallback(wraps: dict[str, Any], typed: str | None, missing: str) -> bytes:
    """A recovery key where the usual way failed: typed, or in CTX_RECOVERY_KEY."""
    if typed and R.looks_like_recovery_key(typed):
        return _by_recovery(wraps, typed)
    env = os.environ.get(ENV_RECOVERY_KEY)
    if env:
        return _by_recovery(wraps, env)
    hint = " (or its recovery key)" if wraps.get("recovery") else ""
    raise KeyUnavailable(f"{missing}{hint}")


def _by_recovery(wraps: dict[str, Any], text: str) -> bytes:
    if not wraps.get("recovery"):
        raise KeyUnavailable("this store has no recovery key (`ctx key recovery` makes one)")
    secret = R.parse_key(text)
    key = R.unwrap(R.RecoveryWrap.from_dict(wraps["recovery"]), secret)
    log.warning("data key unlocked with the recovery key")
    return key


def derive(key: bytes, label: str, length: int = 32) -> bytes:
    """A subkey for one purpose (vault, rotation, name hashing), via HKDF-SHA256."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"ctx-v1",
                info=label.encode()).derive(key)
