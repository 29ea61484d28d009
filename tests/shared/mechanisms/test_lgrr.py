"""L-GRR: the chained channel's exact ε at the boundary, the permanent step's ε∞, the
memoisation derived from a key, the segment and the estimator's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.mechanisms import LongitudinalGRR, LongitudinalGRRSpec, spec_class
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight, max_log_ratio

CASES = [
    (2, 1.0, 0.5),
    (3, 2.0, 1.0),
    (10, 4.0, 1.0),
    (10, 1.0, 0.05),
    (64, 6.0, 2.0),
    (200, 12.0, 3.0),
]
KEY = bytes(range(32))


def grr_channel(d: int, p: float, q: float) -> NDArray[np.float64]:
    m = np.full((d, d), q)
    np.fill_diagonal(m, p)
    return m


@pytest.mark.parametrize(("d", "infinity", "epsilon"), CASES)
def test_one_report_is_exactly_epsilon_one(d: int, infinity: float, epsilon: float) -> None:
    mech = LongitudinalGRR(d=d, epsilon=epsilon, epsilon_infinity=infinity)
    # the chain computed here as a product of the two steps' channels, not from p and q
    chained = grr_channel(d, mech.p2, mech.q2) @ grr_channel(d, mech.p1, mech.q1)
    assert np.allclose(chained, grr_channel(d, mech.p, mech.q), rtol=1e-12, atol=0.0)
    assert mech.exact_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert_tight(chained, mech.exact_epsilon)
    assert_tight(grr_channel(d, mech.p1, mech.q1), mech.permanent_epsilon)
    assert mech.permanent_epsilon == pytest.approx(infinity, rel=1e-12)
    assert mech.p - mech.q == pytest.approx((mech.p1 - mech.q1) * (mech.p2 - mech.q2))


def test_the_instantaneous_step_vanishes_at_equal_budgets() -> None:
    mech = LongitudinalGRR(d=5, epsilon=2.0, epsilon_infinity=2.0)
    assert (mech.p2, mech.q2) == (1.0, 0.0)
    assert mech.exact_epsilon == pytest.approx(2.0, rel=1e-12)


def test_one_report_above_the_permanent_budget_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="exceeds ε∞"):
        LongitudinalGRR(d=5, epsilon=2.0, epsilon_infinity=1.9)
    spec = {
        "name": "daily",
        "epsilon": 3.0,
        "attributes": [
            {"name": "app", "mechanism": "l-grr", "domain": ["a", "b"], "permanent_epsilon": 2.0}
        ],
    }
    with pytest.raises(ConfigurationError, match=r"attribute 'app'.*exceeds ε∞"):
        build_config(CollectionSpec.model_validate(spec))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_the_permanent_budget_must_be_a_positive_number(bad: float) -> None:
    with pytest.raises(ValueError, match="permanent_epsilon"):
        LongitudinalGRRSpec(name="app", mechanism="l-grr", domain=["a", "b"], permanent_epsilon=bad)


def test_registered_and_published() -> None:
    assert spec_class("l-grr") is LongitudinalGRRSpec
    spec = {
        "name": "daily",
        "epsilon": 1.0,
        "attributes": [
            {
                "name": "app",
                "mechanism": "l-grr",
                "domain": ["a", "b", "c"],
                "permanent_epsilon": 3.0,
            }
        ],
    }
    config = build_config(CollectionSpec.model_validate(spec))
    published = config.attribute("app").model_dump()
    assert published["permanent_epsilon"] == pytest.approx(3.0, rel=1e-12)
    assert {"p1", "q1", "p2", "q2", "p", "q"} <= set(published)
    assert (published["encoding"], published["byte_length"]) == ("index", 1)
    assert config.privacy.longitudinal[0].permanent == pytest.approx(3.0, rel=1e-12)
    assert config.privacy.charged_per_report.epsilon == 0.0


def test_the_permanent_step_is_a_function_of_the_key_and_the_value() -> None:
    mech = LongitudinalGRR(d=50, epsilon=0.5, epsilon_infinity=1.0)
    values = np.array([7, 7, 3, 7, 3, 49], dtype=np.int64)
    first = mech.permanent(values, KEY)
    assert np.array_equal(first, mech.permanent(values, KEY))  # same key: memoised
    assert first[0] == first[1] == first[3] and first[2] == first[4]
    assert np.array_equal(first[[0, 2]], mech.permanent(np.array([7, 3]), KEY))  # batch-free
    others = np.array([mech.permanent(np.arange(50), bytes([k]) * 32) for k in range(20)])
    assert len({tuple(row) for row in others}) == 20  # keys give unrelated responses
    assert np.array_equal(mech.memo_keys(values, KEY), values)


def test_memoised_reports_share_the_permanent_response() -> None:
    mech = LongitudinalGRR(d=4, epsilon=2.0, epsilon_infinity=2.0)  # no instantaneous noise
    reports = mech.perturb_memoised(np.full(100, 2, dtype=np.int64), KEY, seeded_rng(1))
    assert len(set(reports.tolist())) == 1
    assert reports[0] == mech.permanent(np.array([2]), KEY)[0]


def test_segment_round_trip_and_bad_index() -> None:
    mech = LongitudinalGRR(d=300, epsilon=1.0, epsilon_infinity=2.0)
    answers = mech.perturb(np.arange(300), seeded_rng(2))
    packed = mech.pack(answers)
    assert packed.shape == (300, 2)
    unpacked = mech.unpack(packed)
    assert np.array_equal(unpacked.values, answers) and not unpacked.bad.any()
    assert mech.unpack(np.array([[1, 44]], dtype=np.uint8)).bad.tolist() == [True]
    with pytest.raises(InvalidRecordError):
        mech.perturb(np.array([300]), seeded_rng(0))


def test_the_estimator_is_the_chains_inversion() -> None:
    mech = LongitudinalGRR(d=6, epsilon=1.0, epsilon_infinity=3.0)
    counts = np.array([400, 250, 120, 90, 80, 60])
    n = int(counts.sum())
    by_hand = (counts / n - mech.q1 * mech.p2 - (1 - mech.q1) * mech.q2) / (
        (mech.p1 - mech.q1) * (mech.p2 - mech.q2)
    )
    estimate = mech.estimate_stats({"counts": counts}, n, 0.95)
    assert np.allclose(estimate.estimate, by_hand, rtol=1e-12)
    f = np.clip(by_hand, 0, 1)
    variance = (f * mech.p * (1 - mech.p) + (1 - f) * mech.q * (1 - mech.q)) / (
        n * (mech.p1 - mech.q1) ** 2 * (mech.p2 - mech.q2) ** 2
    )
    assert np.allclose(estimate.stderr**2, variance, rtol=1e-9)


def test_a_channel_that_drops_the_chains_middle_term_is_looser() -> None:
    """multi-freq-ldpy 0.2.5's p₂ (solved with the two-value chain) spends less than ε₁."""
    d, infinity, epsilon = 10, 4.0, 1.0
    p1 = math.exp(infinity) / (math.exp(infinity) + d - 1)
    q1 = (1 - p1) / (d - 1)
    e = math.exp(epsilon)
    p2 = (q1 - e * p1) / (-p1 * e + d * q1 * e - q1 * e - p1 * (d - 1) + q1)
    chained = grr_channel(d, p2, (1 - p2) / (d - 1)) @ grr_channel(d, p1, q1)
    assert max_log_ratio(chained) == pytest.approx(0.9196, abs=1e-4)
