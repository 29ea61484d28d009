"""The channels mechanisms hand to likelihood-based estimators: each structured product
equals the dense matrix it stands for, and bad counts are refused."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.errors import InvalidQueryError
from ldp_shared.mechanisms import (
    ExponentialRandomizer,
    GeneralizedRandomizedResponse,
    MaskSpec,
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
)
from ldp_shared.mechanisms.likelihood import (
    DenseChannel,
    RandomizedResponseChannel,
    ReportChannel,
    UnaryBitChannel,
)
from ldp_shared.rand import seeded_rng


def _dense(channel: ReportChannel, outputs: int) -> np.ndarray:
    """The matrix behind ``forward``, column by column."""
    return np.stack([channel.forward(np.eye(channel.cells)[x]) for x in range(channel.cells)], 1)


def _check_products(channel: ReportChannel, outputs: int) -> np.ndarray:
    m = _dense(channel, outputs)
    assert m.shape == (outputs, channel.cells)
    np.testing.assert_allclose(m.sum(axis=0), 1.0, rtol=0, atol=1e-12)  # column-stochastic
    gen = seeded_rng(3)
    f, r = gen.dirichlet(np.ones(channel.cells)), gen.random(outputs)
    np.testing.assert_allclose(channel.forward(f), m @ f, rtol=1e-12)
    np.testing.assert_allclose(channel.backward(r), m.T @ r, rtol=1e-12)
    return m


def test_grr_channel_is_its_matrix() -> None:
    grr = GeneralizedRandomizedResponse(5, 1.3)
    channel = grr.report_channel({"counts": np.arange(1.0, 6.0)}, 15)
    assert isinstance(channel, RandomizedResponseChannel)
    np.testing.assert_allclose(_check_products(channel, 5), grr.channel_matrix(), rtol=1e-15)


@pytest.mark.parametrize("mechanism", [OptimizedUnaryEncoding, SymmetricUnaryEncoding])
def test_unary_channel_is_the_per_bit_channel(mechanism: type) -> None:
    """Output (v, 1) is "bit v is 1", (v, 0) "bit v is 0", each chosen with 1/d."""
    ue = mechanism(4, 1.0)
    channel = ue.report_channel({"counts": np.array([3.0, 5.0, 0.0, 10.0])}, 10)
    assert isinstance(channel, UnaryBitChannel)
    np.testing.assert_array_equal(channel.counts, [3, 5, 0, 10, 7, 5, 10, 0])
    m = _check_products(channel, 8)
    one = np.where(np.eye(4, dtype=bool), ue.p, ue.q)
    np.testing.assert_allclose(m, np.vstack([one, 1.0 - one]) / 4, rtol=1e-14)


def test_exponential_channel_is_its_integer_channel() -> None:
    mech = ExponentialRandomizer(6, 2.0, "ordinal")
    channel = mech.report_channel({"counts": np.ones(6)}, 6)
    assert isinstance(channel, DenseChannel)
    np.testing.assert_array_equal(_check_products(channel, 6), mech.channel_matrix())


def test_mask_has_no_channel() -> None:
    spec = MaskSpec.model_validate(
        {"name": "b", "mechanism": "mask", "domain": ["x", "y"], "keep_probability": 0.8}
    )
    mask = spec.randomizer(None)
    assert mask.report_channel({"counts": np.ones(2)}, 2) is None
    assert mask.frequency_covariance({"counts": np.ones(2)}, 2) is None


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([1.0, 2.0], "3 finite non-negative"),
        ([1.0, -1.0, 2.0], "non-negative"),
        ([1.0, np.nan, 2.0], "finite"),
        ([0.0, 0.0, 0.0], "no reports"),
    ],
)
def test_bad_counts(counts: list[float], message: str) -> None:
    with pytest.raises(InvalidQueryError, match=message):
        RandomizedResponseChannel(3, 0.5, 0.25, np.asarray(counts))


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.ones((0, 2)), "non-empty"),
        (np.array([[0.5, 1.2], [0.5, -0.2]]), "non-negative"),
        (np.array([[0.5, 0.5], [0.4, 0.5]]), "sum to 1"),
    ],
)
def test_bad_dense_channel(matrix: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidQueryError, match=message):
        DenseChannel(matrix, np.ones(matrix.shape[0]))
