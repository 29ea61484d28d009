"""L-OSUE: the chained channel's exact ε at the boundary, the permanent step's ε∞, the
memoisation derived from a key, the one-record path, the segment and the estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.mechanisms import LongitudinalOSUE, LongitudinalOSUESpec, spec_class
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

CASES = [
    (2, 1.0, 0.5),
    (3, 2.0, 1.0),
    (4, 4.0, 1.0),
    (5, 1.0, 0.05),
    (6, 6.0, 2.0),
    (6, 12.0, 3.0),
]
KEY = bytes(range(32))


def bit_channel(
    d: int, one_given_one: NDArray[np.float64], one_given_zero: float
) -> NDArray[np.float64]:
    """``M[y, x]`` over all ``2^d`` bit vectors ``y`` when value ``x`` is one-hot and bit
    ``v`` is 1 with ``one_given_one[v]`` if ``v = x`` else ``one_given_zero``."""
    outputs = (np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1
    m = np.empty((2**d, d))
    for x in range(d):
        rate = np.full(d, one_given_zero)
        rate[x] = one_given_one[x]
        m[:, x] = np.prod(np.where(outputs == 1, rate, 1.0 - rate), axis=1)
    return m


def flip_channel(d: int, keep: float) -> NDArray[np.float64]:
    """``K[y, z]``: every bit of ``z`` kept with ``keep``, flipped otherwise."""
    one_bit = np.array([[keep, 1.0 - keep], [1.0 - keep, keep]])
    out = np.ones((1, 1))
    for _ in range(d):
        out = np.kron(one_bit, out)
    return out


@pytest.mark.parametrize(("d", "infinity", "epsilon"), CASES)
def test_one_report_is_exactly_epsilon_one(d: int, infinity: float, epsilon: float) -> None:
    mech = LongitudinalOSUE(d=d, epsilon=epsilon, epsilon_infinity=infinity)
    permanent = bit_channel(d, np.full(d, mech.p1), mech.q1)
    # the chain as the product of the two steps' full channels over 2^d vectors
    chained = flip_channel(d, mech.p2) @ permanent
    assert np.allclose(chained.sum(axis=0), 1.0, atol=1e-12)
    assert_tight(chained, mech.exact_epsilon)
    assert mech.exact_epsilon == pytest.approx(epsilon, rel=1e-9)
    assert_tight(permanent, mech.permanent_epsilon)
    assert mech.permanent_epsilon == pytest.approx(infinity, rel=1e-9)
    # closed form of p₂ (Arcolezi et al. 2022), and p = 1/2
    e1, ei = math.exp(epsilon), math.exp(infinity)
    assert mech.p2 == pytest.approx((e1 * ei - 1) / ((e1 + 1) * (ei - 1)), rel=1e-12)
    assert mech.p == 0.5 and mech.q == pytest.approx(1 / (e1 + 1), rel=1e-12)


def test_rounding_only_adds_noise() -> None:
    for d, infinity, epsilon in CASES:
        mech = LongitudinalOSUE(d=d, epsilon=epsilon, epsilon_infinity=infinity)
        assert mech.q1 >= 1 / (math.exp(infinity) + 1)
        assert mech.exact_epsilon <= epsilon * (1 + 1e-12)
        assert mech.permanent_epsilon <= infinity * (1 + 1e-12)


def test_the_instantaneous_step_vanishes_at_equal_budgets() -> None:
    mech = LongitudinalOSUE(d=5, epsilon=2.0, epsilon_infinity=2.0)
    assert (mech.p2, mech.q2) == (1.0, 0.0)
    assert mech.exact_epsilon == pytest.approx(2.0, rel=1e-12)
    reports = mech.perturb_memoised(np.full(50, 1, dtype=np.int64), KEY, seeded_rng(1))
    assert len({row.tobytes() for row in reports}) == 1


def test_one_report_above_the_permanent_budget_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="exceeds ε∞"):
        LongitudinalOSUE(d=5, epsilon=2.0, epsilon_infinity=1.9)
    spec = {
        "name": "daily",
        "epsilon": 3.0,
        "attributes": [
            {"name": "app", "mechanism": "l-osue", "domain": ["a", "b"], "permanent_epsilon": 2.0}
        ],
    }
    with pytest.raises(ConfigurationError, match=r"attribute 'app'.*exceeds ε∞"):
        build_config(CollectionSpec.model_validate(spec))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_the_permanent_budget_must_be_a_positive_number(bad: float) -> None:
    with pytest.raises(ValueError, match="permanent_epsilon"):
        LongitudinalOSUESpec(
            name="app", mechanism="l-osue", domain=["a", "b"], permanent_epsilon=bad
        )


def test_registered_and_published() -> None:
    assert spec_class("l-osue") is LongitudinalOSUESpec
    domain = [f"v{i}" for i in range(20)]
    spec = {
        "name": "daily",
        "epsilon": 1.0,
        "attributes": [
            {"name": "app", "mechanism": "l-osue", "domain": domain, "permanent_epsilon": 3.0}
        ],
    }
    config = build_config(CollectionSpec.model_validate(spec))
    published = config.attribute("app").model_dump()
    assert published["permanent_epsilon"] == pytest.approx(3.0, rel=1e-12)
    assert {"p1", "q1", "p2", "q2", "p", "q"} <= set(published)
    assert (published["encoding"], published["byte_length"]) == ("bits", 3)
    assert config.privacy.longitudinal[0].permanent == pytest.approx(3.0, rel=1e-12)
    assert config.privacy.charged_per_report.epsilon == 0.0


def test_the_permanent_step_is_a_function_of_the_key_and_the_value() -> None:
    mech = LongitudinalOSUE(d=50, epsilon=0.5, epsilon_infinity=1.0)
    values = np.array([7, 7, 3, 7, 3, 49], dtype=np.int64)
    first = mech.permanent(values, KEY)
    assert first.shape == (6, 7)
    assert np.array_equal(first, mech.permanent(values, KEY))  # same key: memoised
    assert np.array_equal(first[0], first[1]) and np.array_equal(first[0], first[3])
    assert np.array_equal(first[2], first[4]) and not np.array_equal(first[0], first[2])
    assert np.array_equal(first[[0, 2]], mech.permanent(np.array([7, 3]), KEY))  # batch-free
    others = [mech.permanent(np.array([7]), bytes([k]) * 32)[0].tobytes() for k in range(20)]
    assert len(set(others)) == 20  # keys give unrelated vectors
    assert np.array_equal(mech.memo_keys(values, KEY), values)
    assert not (first[:, -1] & 0x3F).any()  # padding bits of 50 = 6·8 + 2 stay zero


@pytest.mark.parametrize(
    ("d", "epsilon", "infinity"), [(2, 0.5, 1.0), (13, 1.0, 2.0), (32, 2.0, 2.0), (70, 1.0, 3.0)]
)
def test_one_record_has_the_vector_paths_permanent_vector(
    d: int, epsilon: float, infinity: float
) -> None:
    """The one-record path's permanent vector is the vector path's (the same PRF draws),
    kept in memory; at ε₁ = ε∞ (no instantaneous noise) its answers are the vector
    path's. Its instantaneous flips: tests/shared/mechanisms/test_longitudinal_one_record.py."""
    mech = LongitudinalOSUE(d=d, epsilon=epsilon, epsilon_infinity=infinity)
    gen = np.random.default_rng(7)
    for i in range(200):
        key = gen.integers(0, 256, size=32, dtype=np.uint8).tobytes()
        v = i % d
        vector = np.unpackbits(mech.permanent(np.array([v, v]), key)[:1], axis=1, count=d)
        one = mech.permanent_one(v, key)
        assert one.shape == (1, d) and np.array_equal(one, vector.view(np.bool_))
        assert mech.permanent_one(v, key) is one  # memoised
        fast = mech.perturb_memoised(np.array([v]), key, seeded_rng(i))
        if mech.q2 == 0.0:
            slow = mech.perturb_memoised(np.array([v, v]), key, seeded_rng(i))[:1]
            assert np.array_equal(fast, slow)
        assert fast.shape == (1, d) and fast.dtype == np.bool_


def test_segment_round_trip_and_bad_input() -> None:
    mech = LongitudinalOSUE(d=300, epsilon=1.0, epsilon_infinity=2.0)
    answers = mech.perturb_memoised(np.arange(300), KEY, seeded_rng(2))
    packed = mech.pack(answers)
    assert packed.shape == (300, 38)
    unpacked = mech.unpack(packed)
    assert np.array_equal(unpacked.values, answers) and not unpacked.bad.any()
    bad = packed[:1].copy()
    bad[0, -1] |= 1  # a padding bit
    assert mech.unpack(bad).bad.tolist() == [True]
    with pytest.raises(InvalidRecordError):
        mech.perturb_memoised(np.array([300]), KEY, seeded_rng(0))
    with pytest.raises(InvalidRecordError):
        mech.perturb(np.array([-1]), seeded_rng(0))


def test_the_estimator_is_unbiased_on_the_expected_counts() -> None:
    mech = LongitudinalOSUE(d=6, epsilon=1.0, epsilon_infinity=3.0)
    f = np.array([0.4, 0.25, 0.15, 0.1, 0.1, 0.0])
    n = 1000
    # E[C_v] through the two steps: P(B_v = 1) then P(y_v = 1 | B_v)
    permanent_one = f * mech.p1 + (1 - f) * mech.q1
    expected = n * (permanent_one * mech.p2 + (1 - permanent_one) * mech.q2)
    estimate = mech.estimate_stats({"counts": expected}, n, 0.95)
    assert np.allclose(estimate.estimate, f, atol=1e-12)
    counts = np.array([400, 250, 120, 90, 80, 60])
    by_hand = (counts / n - mech.q1 * mech.p2 - (1 - mech.q1) * mech.q2) / (
        (mech.p1 - mech.q1) * (mech.p2 - mech.q2)
    )
    estimate = mech.estimate_stats({"counts": counts}, n, 0.95)
    assert np.allclose(estimate.estimate, by_hand, rtol=1e-12)
    fc = np.clip(by_hand, 0, 1)
    variance = (fc * mech.p * (1 - mech.p) + (1 - fc) * mech.q * (1 - mech.q)) / (
        n * (mech.p1 - mech.q1) ** 2 * (mech.p2 - mech.q2) ** 2
    )
    assert np.allclose(estimate.stderr**2, variance, rtol=1e-9)
