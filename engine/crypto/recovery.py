"""The recovery key: a secret shown once, able to unlock the data key by itself.

A recovery key is 160 random bits with a 20-bit checksum, written as 36
characters of base32 in nine groups of four (``ABCD-EFGH-...``): short enough to
copy by hand, long enough that guessing it is hopeless, and a typo is caught by
the checksum instead of reading as a wrong key.

The data key is wrapped for it as for a public key (X25519, then HKDF-SHA256
and AES-256-GCM, as in ECIES): the store keeps only the recovery key's public
half, so a new data key (``ctx key rotate``) can be wrapped for the same
recovery key without asking for it. Whoever holds the recovery key derives the
private half and unwraps the data key; nothing else can.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from engine.errors import RecoveryKeyInvalid, WrongKey

ENV_RECOVERY_KEY = "CTX_RECOVERY_KEY"
SECRET_BYTES = 20  # 160 bits
CHECK_BITS = 20
CHARS = 36  # (160 + 20) / 5
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_LOOKALIKE = str.maketrans({"0": "O", "1": "I", "8": "B"})
_WRAP_AAD = b"ctx-data-key-recovery-v1"


def _checksum(secret: bytes) -> int:
    digest = hashlib.sha256(b"ctx-recovery-check" + secret).digest()
    return int.from_bytes(digest[:3], "big") >> (24 - CHECK_BITS)


def format_key(secret: bytes) -> str:
    """The recovery key as the user writes it down."""
    n = (int.from_bytes(secret, "big") << CHECK_BITS) | _checksum(secret)
    chars = "".join(_ALPHABET[(n >> (5 * i)) & 31] for i in reversed(range(CHARS)))
    return "-".join(chars[i:i + 4] for i in range(0, CHARS, 4))


def new_recovery_key() -> str:
    """A fresh recovery key (its text; the only copy is the caller's)."""
    return format_key(secrets.token_bytes(SECRET_BYTES))


def looks_like_recovery_key(text: str) -> bool:
    """Whether ``text`` has a recovery key's shape (36 base32 characters, any grouping)."""
    clean = _clean(text)
    return len(clean) == CHARS and all(c in _ALPHABET for c in clean)


def _clean(text: str) -> str:
    return "".join(c for c in text.upper().translate(_LOOKALIKE) if c not in " -_\t\r\n")


def parse_key(text: str) -> bytes:
    """The secret of a recovery key as typed (case, dashes, spaces and 0/1/8 for O/I/B
    forgiven). RecoveryKeyInvalid when it is not one, or its checksum fails (a typo)."""
    clean = _clean(text)
    if len(clean) != CHARS or any(c not in _ALPHABET for c in clean):
        raise RecoveryKeyInvalid(
            f"not a recovery key: one is {CHARS} letters and digits 2-7, in groups of four")
    n = 0
    for c in clean:
        n = (n << 5) | _ALPHABET.index(c)
    secret = (n >> CHECK_BITS).to_bytes(SECRET_BYTES, "big")
    if n & ((1 << CHECK_BITS) - 1) != _checksum(secret):
        raise RecoveryKeyInvalid("the recovery key has a typo (its checksum does not match): "
                                 "check each group of four against the one you kept")
    return secret


def _private(secret: bytes) -> X25519PrivateKey:
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"ctx-recovery-v1",
                info=b"x25519").derive(secret)
    return X25519PrivateKey.from_private_bytes(seed)


def public_key(secret: bytes) -> bytes:
    """The public half of a recovery key (what a store keeps)."""
    return _private(secret).public_key().public_bytes_raw()


def key_id(public: bytes) -> str:
    """A short id of a recovery key (of its public half): tells two apart, reveals nothing."""
    return hashlib.sha256(b"ctx-recovery-id" + public).hexdigest()[:12]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any, size: int, what: str) -> bytes:
    try:
        raw = base64.b64decode(str(text).encode("ascii"), validate=True)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        raw = b""
    if len(raw) != size:
        raise ValueError(f"recovery.{what} is not valid base64 of {size} bytes")
    return raw


def _kek(shared: bytes, eph: bytes, public: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=eph + public,
                info=b"ctx-recovery-wrap-v1").derive(shared)


@dataclass(frozen=True)
class RecoveryWrap:
    """The data key wrapped for a recovery key's public half (all base64 but ``id``)."""

    id: str
    public: str
    ephemeral: str
    nonce: str
    wrapped: str

    def to_dict(self) -> dict[str, str]:
        return dict(self.__dict__)

    def public_bytes(self) -> bytes:
        return _unb64(self.public, 32, "public")

    @classmethod
    def from_dict(cls, data: Any) -> RecoveryWrap:
        """Checked field by field: ValueError names the field that is wrong."""
        if not isinstance(data, dict) or set(data) != {"id", "public", "ephemeral", "nonce",
                                                       "wrapped"}:
            raise ValueError("recovery: unknown or missing fields")
        wrap = cls(**{k: str(v) for k, v in data.items()})
        public = _unb64(wrap.public, 32, "public")
        _unb64(wrap.ephemeral, 32, "ephemeral")
        _unb64(wrap.nonce, 12, "nonce")
        _unb64(wrap.wrapped, 48, "wrapped")
        if wrap.id != key_id(public):
            raise ValueError("recovery.id does not match its public key")
        return wrap


def wrap_for(public: bytes, data_key: bytes) -> RecoveryWrap:
    """Wrap ``data_key`` for the recovery key whose public half is ``public``."""
    eph = X25519PrivateKey.generate()
    eph_pub = eph.public_key().public_bytes_raw()
    shared = eph.exchange(X25519PublicKey.from_public_bytes(public))
    nonce = secrets.token_bytes(12)
    wrapped = AESGCM(_kek(shared, eph_pub, public)).encrypt(nonce, data_key, _WRAP_AAD)
    return RecoveryWrap(key_id(public), _b64(public), _b64(eph_pub), _b64(nonce), _b64(wrapped))


def unwrap(wrap: RecoveryWrap, secret: bytes) -> bytes:
    """The data key, or WrongKey when ``secret`` is not the recovery key it was wrapped for."""
    private = _private(secret)
    public = private.public_key().public_bytes_raw()
    if _b64(public) != wrap.public:
        raise WrongKey("this recovery key does not belong to this store (or was replaced by "
                       "a newer one)")
    eph = _unb64(wrap.ephemeral, 32, "ephemeral")
    shared = private.exchange(X25519PublicKey.from_public_bytes(eph))
    try:
        return AESGCM(_kek(shared, eph, public)).decrypt(
            _unb64(wrap.nonce, 12, "nonce"), _unb64(wrap.wrapped, 48, "wrapped"), _WRAP_AAD)
    except InvalidTag:
        raise WrongKey("the recovery key's wrapping of the data key is damaged") from None
