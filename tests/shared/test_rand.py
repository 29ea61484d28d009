"""Random sources: seeded streams repeat, secure ones do not, and None means secure."""

from __future__ import annotations

import numpy as np

from ldp_shared.rand import resolve_rng, secure_rng, seeded_rng


def test_seeded_streams_repeat() -> None:
    np.testing.assert_array_equal(seeded_rng(5).random(10), seeded_rng(5).random(10))
    assert not np.array_equal(seeded_rng(5).random(10), seeded_rng(6).random(10))


def test_secure_streams_differ() -> None:
    a, b = secure_rng(), secure_rng()
    assert not np.array_equal(a.integers(0, 2**63, 4), b.integers(0, 2**63, 4))


def test_secure_is_aes_counter() -> None:
    assert type(secure_rng().bit_generator).__name__ == "AESCounter"


def test_resolve() -> None:
    g = seeded_rng(1)
    assert resolve_rng(g) is g
    resolved = resolve_rng(None)
    assert isinstance(resolved, np.random.Generator)
    assert type(resolved.bit_generator).__name__ == "AESCounter"
