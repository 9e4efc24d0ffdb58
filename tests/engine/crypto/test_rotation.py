from __future__ import annotations

import numpy as np

from engine.crypto.rotation import NameHasher, Rotation


def test_rotation_is_orthogonal_and_keeps_cosine() -> None:
    rot = Rotation(b"\x07" * 32, 64)
    rng = np.random.default_rng(0)
    v = rng.standard_normal((20, 64)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    r = rot.apply(v)
    assert np.allclose(v @ v.T, r @ r.T, atol=1e-5)
    assert np.allclose(rot.invert(r), v, atol=1e-5)
    assert not np.allclose(r, v, atol=1e-2)


def test_rotation_depends_on_key() -> None:
    v = np.eye(8, dtype=np.float32)
    a = Rotation(b"\x01" * 32, 8).apply(v)
    b = Rotation(b"\x02" * 32, 8).apply(v)
    assert np.allclose(a, Rotation(b"\x01" * 32, 8).apply(v))
    assert not np.allclose(a, b)


def test_name_hasher_is_keyed() -> None:
    assert NameHasher(b"\x01" * 32)("proj") != NameHasher(b"\x02" * 32)("proj")
    assert "proj" not in NameHasher(b"\x01" * 32)("proj")
