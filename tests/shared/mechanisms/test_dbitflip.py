"""dBitFlipPM: exact ε of the whole channel at the boundary, bucketing, the memoised
device (permanent buckets, one response per bucket vector), the segment and the
statistics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.collection import build_config
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.mechanisms import DBitFlipPM, DBitFlipSpec, spec_class
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from ._channel import assert_tight

KEY = b"device secret for the tests....."


def whole_channel(mech: DBitFlipPM) -> NDArray[np.float64]:
    """``M[(S, bits), x]`` over every sampled set and bit pattern (computed here)."""
    subsets = list(itertools.combinations(range(mech.d), mech.b))
    rows = []
    for subset in subsets:
        for bits in itertools.product([0, 1], repeat=mech.b):
            row = []
            for x in range(mech.d):
                truth = [int(j == x) for j in subset]
                flips = sum(t != y for t, y in zip(truth, bits, strict=True))
                row.append((mech.flip**flips) * (1 - mech.flip) ** (mech.b - flips))
            rows.append(np.array(row) / len(subsets))
    return np.array(rows)


@pytest.mark.parametrize(
    ("d", "b", "epsilon"), [(2, 1, 1.0), (4, 1, 2.0), (4, 2, 2.0), (5, 3, 0.5), (6, 6, 3.0)]
)
def test_the_whole_channel_is_exactly_epsilon(d: int, b: int, epsilon: float) -> None:
    mech = DBitFlipPM(d=d, b=b, epsilon=epsilon)
    assert mech.exact_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert mech.exact_epsilon <= epsilon * (1 + 1e-12)
    assert_tight(whole_channel(mech), mech.exact_epsilon)
    assert mech.permanent_epsilon == mech.exact_epsilon


def test_the_flip_probability_is_the_papers() -> None:
    assert DBitFlipPM(d=8, b=3, epsilon=2.0).flip == pytest.approx(1 / (math.e + 1), rel=1e-15)
    assert DBitFlipPM(d=8, b=1, epsilon=2.0).flip == pytest.approx(1 / (math.e**2 + 1), rel=1e-15)


def spec(**changes: object) -> DBitFlipSpec:
    base: dict[str, object] = {"name": "minutes", "mechanism": "dbitflippm", "lo": 0, "hi": 60}
    return DBitFlipSpec.model_validate({**base, "buckets": 6, "bits": 2, **changes})


def test_bucketing_and_labels() -> None:
    s = spec()
    assert s.values == ["[0, 10)", "[10, 20)", "[20, 30)", "[30, 40)", "[40, 50)", "[50, 60]"]
    buckets = s.encode([-5, 0, 9.99, 10, 59, 60, 1e9])
    assert buckets.tolist() == [0, 0, 0, 1, 5, 5, 5]
    assert s.canonical_value(12) == s.canonical_value(19.5) == "1"
    assert spec_class("dbitflippm") is DBitFlipSpec


@pytest.mark.parametrize(
    "changes", [{"bits": 7}, {"bits": 0}, {"buckets": 1}, {"lo": 5, "hi": 5}, {"buckets": 2000}]
)
def test_bad_parameters(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        spec(**changes)


def test_a_device_samples_its_buckets_once() -> None:
    mech = DBitFlipPM(d=20, b=4, epsilon=1.0)
    sampled = mech.sampled_buckets(KEY)
    assert np.array_equal(sampled, mech.sampled_buckets(KEY))
    assert sampled.size == 4 and np.all(np.diff(sampled) > 0) and sampled.max() < 20
    devices = {tuple(mech.sampled_buckets(bytes([k]) * 32)) for k in range(30)}
    assert len(devices) > 25


def test_one_response_per_bucket_vector() -> None:
    mech = DBitFlipPM(d=12, b=3, epsilon=1.0)
    sampled = mech.sampled_buckets(KEY)
    unsampled = np.setdiff1d(np.arange(12), sampled)
    values = np.concatenate([unsampled, sampled, sampled, unsampled[::-1]])
    keys = mech.memo_keys(values, KEY)
    assert set(keys.tolist()) == {0, 1, 2, 3}  # at most b + 1 bucket vectors
    reports = mech.perturb_memoised(values, KEY, seeded_rng(0))
    again = mech.perturb_memoised(values, KEY, seeded_rng(99))  # no fresh noise at all
    assert np.array_equal(reports, again)
    assert np.all(reports[:, :3] == sampled)
    by_key = {k: tuple(row) for k, row in zip(keys.tolist(), reports.tolist(), strict=True)}
    for k, row in zip(keys.tolist(), reports.tolist(), strict=True):
        assert tuple(row) == by_key[k]  # every unsampled bucket gives one response


@pytest.mark.parametrize(("d", "b", "width"), [(10, 3, 1), (300, 9, 2)])
def test_segment_round_trip(d: int, b: int, width: int) -> None:
    mech = DBitFlipPM(d=d, b=b, epsilon=2.0)
    assert mech.segment.byte_length == b * width + (b + 7) // 8
    answers = mech.perturb(np.arange(d) % d, seeded_rng(3))
    packed = mech.pack(answers)
    assert packed.shape == (d, mech.segment.byte_length)
    unpacked = mech.unpack(packed)
    assert np.array_equal(unpacked.values, answers) and not unpacked.bad.any()


def test_rows_no_device_sends_are_bad() -> None:
    mech = DBitFlipPM(d=10, b=3, epsilon=2.0)
    rows = np.array(
        [
            [1, 4, 9, 0b10100000],  # fine
            [4, 1, 9, 0],  # not increasing
            [1, 1, 9, 0],  # repeated
            [1, 4, 10, 0],  # beyond the buckets
            [1, 4, 9, 0b00010000],  # padding bit
        ],
        dtype=np.uint8,
    )
    assert mech.unpack(rows).bad.tolist() == [False, True, True, True, True]


def test_statistics_and_the_empty_bucket() -> None:
    mech = DBitFlipPM(d=4, b=2, epsilon=2.0)
    answers = np.array([[0, 1, 1, 0], [1, 3, 1, 1], [0, 3, 0, 0]])
    stats = mech.accumulate(answers)
    assert stats["sampled"].tolist() == [2, 2, 0, 2] and stats["ones"].tolist() == [1, 1, 0, 1]
    with pytest.raises(InsufficientReportsError, match="bucket 2"):
        mech.estimate_stats(stats, 3, 0.95)


def test_the_estimate_and_its_variance() -> None:
    mech = DBitFlipPM(d=3, b=2, epsilon=1.5)
    stats = {"sampled": np.array([700, 650, 650]), "ones": np.array([400, 300, 250])}
    n = 1000
    estimate = mech.estimate_stats(stats, n, 0.95)
    m = stats["sampled"].astype(float)
    f = (stats["ones"] / m - mech.q) / (mech.p - mech.q)
    assert np.allclose(estimate.estimate, f, rtol=1e-12)
    fc = np.clip(f, 0, 1)
    variance = mech.q * (1 - mech.q) / (m * (mech.p - mech.q) ** 2) + fc * (1 - fc) * (n - m) / (
        m * (n - 1)
    )
    assert np.allclose(estimate.stderr**2, variance, rtol=1e-12)
    assert np.all(estimate.ci_low <= estimate.estimate) and np.all(
        estimate.estimate <= estimate.ci_high
    )


def test_a_collection_publishes_it() -> None:
    payload = {
        "name": "usage",
        "epsilon": 2.0,
        "attributes": [
            {
                "name": "minutes",
                "mechanism": "dbitflippm",
                "lo": 0,
                "hi": 600,
                "buckets": 300,
                "bits": 4,
            }
        ],
    }
    config = build_config(CollectionSpec.model_validate(payload))
    attribute = config.attribute("minutes").model_dump()
    assert (attribute["encoding"], attribute["byte_length"]) == ("bucket-bits", 9)
    assert (attribute["buckets"], attribute["bits"]) == (300, 4)
    assert config.stats_length == 600
    assert config.epsilon == pytest.approx(2.0, rel=1e-12)
    assert config.privacy.longitudinal[0].permanent == pytest.approx(2.0, rel=1e-12)
