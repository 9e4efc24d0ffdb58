"""An agent's hint for a key error names the default key file ctx reads by itself."""

from __future__ import annotations

import pytest

from engine import CtxError, KeyUnavailable, StoreLocked, WrongKey, default_key_file
from ipc.fixes import fix_for


@pytest.mark.parametrize("exc", [KeyUnavailable("no way"), WrongKey("does not open")])
def test_key_errors_name_the_default_key_file(exc: CtxError) -> None:
    assert str(default_key_file()) in fix_for(exc)


def test_other_errors_do_not() -> None:
    assert str(default_key_file()) not in fix_for(StoreLocked("held"))
