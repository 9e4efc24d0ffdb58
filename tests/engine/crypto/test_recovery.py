"""The recovery key: its text, its checksum, and the data key wrapped for it."""

from __future__ import annotations

import secrets

import pytest

from engine.crypto import recovery as R
from engine.errors import RecoveryKeyInvalid, WrongKey


def test_text_round_trips_and_forgives_how_it_is_typed() -> None:
    secret = secrets.token_bytes(R.SECRET_BYTES)
    text = R.format_key(secret)
    groups = text.split("-")
    assert len(groups) == 9 and all(len(g) == 4 for g in groups)
    assert R.parse_key(text) == secret
    typed = text.lower().replace("-", " ").replace("O", "0").replace("I", "1")
    assert R.parse_key(typed) == secret
    assert R.looks_like_recovery_key(typed)


def test_every_single_typo_is_caught_by_the_checksum() -> None:
    text = R.new_recovery_key()
    clean = text.replace("-", "")
    caught = 0
    for i in range(len(clean)):
        wrong = "A" if clean[i] != "A" else "B"
        with pytest.raises(RecoveryKeyInvalid, match="typo"):
            R.parse_key(clean[:i] + wrong + clean[i + 1:])
        caught += 1
    assert caught == R.CHARS


@pytest.mark.parametrize("text", ["", "correct horse battery staple", "ABCD-EFGH", "A" * 37,
                                  "!" * 36])
def test_what_is_not_a_recovery_key_is_said_so(text: str) -> None:
    assert not R.looks_like_recovery_key(text)
    with pytest.raises(RecoveryKeyInvalid, match="not a recovery key"):
        R.parse_key(text)


def test_the_data_key_unwraps_with_its_recovery_key_only() -> None:
    data_key = secrets.token_bytes(32)
    text = R.new_recovery_key()
    wrap = R.wrap_for(R.public_key(R.parse_key(text)), data_key)
    again = R.RecoveryWrap.from_dict(wrap.to_dict())
    assert R.unwrap(again, R.parse_key(text)) == data_key
    with pytest.raises(WrongKey, match="does not belong"):
        R.unwrap(again, R.parse_key(R.new_recovery_key()))
    # the record keeps the public half only: no secret, no data key in it
    assert data_key.hex() not in str(wrap.to_dict())
    assert R.parse_key(text).hex() not in str(wrap.to_dict())


def test_a_damaged_wrapping_is_refused_by_field() -> None:
    wrap = R.wrap_for(R.public_key(R.parse_key(R.new_recovery_key())), b"k" * 32).to_dict()
    with pytest.raises(ValueError, match="recovery.id"):
        R.RecoveryWrap.from_dict({**wrap, "id": "000000000000"})
    with pytest.raises(ValueError, match="recovery.nonce"):
        R.RecoveryWrap.from_dict({**wrap, "nonce": "AAAA"})
    with pytest.raises(ValueError, match="fields"):
        R.RecoveryWrap.from_dict({**wrap, "extra": "x"})
