"""A device's one-record path of the longitudinal mechanisms (pure Python, no numpy per
call) gives exactly the answers of the vectorised path: same PRF draws, same generator
draws in the same order, same arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.mechanisms import DBitFlipPM, LongitudinalGRR
from ldp_shared.mechanisms.longitudinal import prf_uniform_list, prf_uniforms
from ldp_shared.rand import seeded_rng


def keys(count: int) -> list[bytes]:
    gen = np.random.default_rng(7)
    return [row.tobytes() for row in gen.integers(0, 256, size=(count, 32), dtype=np.uint8)]


def test_prf_lists_are_the_prf_arrays() -> None:
    for key in keys(20):
        for count in (1, 2, 4, 5, 24):
            assert (
                prf_uniform_list(key, b"m\n3", count)
                == prf_uniforms(key, [b"m\n3"], count)[0].tolist()
            )


@pytest.mark.parametrize(
    ("d", "epsilon", "infinity"), [(2, 0.5, 1.0), (8, 1.0, 2.0), (100, 4.0, 4.0)]
)
def test_lgrr_one_record_equals_the_vector_path(d: int, epsilon: float, infinity: float) -> None:
    mech = LongitudinalGRR(d=d, epsilon=epsilon, epsilon_infinity=infinity)
    seen = set()
    for i, key in enumerate(keys(300)):
        v = i % d
        fast = mech.perturb_memoised(np.array([v]), key, seeded_rng(i))
        # the vector path: permanent over two copies (np.unique), instantaneous on one
        slow = mech.instantaneous(mech.permanent(np.array([v, v]), key)[:1], seeded_rng(i))
        assert fast.tolist() == slow.tolist()
        seen.add(int(fast[0]) == v)
    assert seen == {True, False}  # both branches of the GRR steps were taken


@pytest.mark.parametrize(("d", "b"), [(8, 2), (24, 2), (5, 5), (30, 7)])
def test_dbitflip_one_record_equals_the_vector_path(d: int, b: int) -> None:
    mech = DBitFlipPM(d=d, b=b, epsilon=1.0)
    for i, key in enumerate(keys(200)):
        v = (i * 7) % d
        fast = mech.perturb_memoised(np.array([v]), key)
        slow = mech.perturb_memoised(np.array([v, v]), key)[:1]
        assert fast.tolist() == slow.tolist()
