"""Quantiles of a binned number: exact interpolation, the inverted band against a brute
force inversion, and bad levels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ldp_shared.analyses.ordinal import normalised
from ldp_shared.analyses.quantiles import (
    MAX_PROBABILITIES,
    binned_quantiles,
    check_probabilities,
)
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import z_value
from ldp_shared.mechanisms import GeneralizedRandomizedResponse, OptimizedUnaryEncoding
from ldp_shared.rand import seeded_rng

EDGES = np.array([17.0, 25.0, 35.0, 45.0, 55.0, 65.0, 90.0])
TRUTH = np.array([0.15, 0.25, 0.22, 0.18, 0.12, 0.08])
LEVELS = [0.01, 0.1, 0.15, 0.25, 0.5, 0.75, 0.9, 0.99]


def _moments(mechanism: Any, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    stats = {"counts": counts}
    return mechanism.estimate_stats(stats, n, 0.95).estimate, mechanism.frequency_covariance(
        stats, n
    )


def _expected(mechanism: Any, n: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(mechanism, GeneralizedRandomizedResponse):
        return _moments(mechanism, n * (mechanism.channel_matrix() @ TRUTH), n)
    return _moments(mechanism, n * (mechanism.q + (mechanism.p - mechanism.q) * TRUTH), n)


MECHANISMS = [GeneralizedRandomizedResponse(6, 1.0), OptimizedUnaryEncoding(6, 1.0)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_exact_on_a_known_distribution(mechanism: Any) -> None:
    """From the expected statistics the estimate is the truth, so each quantile is the
    inverse of the piecewise-linear CDF through the edges (here by np.interp)."""
    found = binned_quantiles(EDGES, *_expected(mechanism), LEVELS)
    cdf = np.concatenate([[0.0], np.cumsum(TRUTH)])
    expected = np.interp(LEVELS, cdf, EDGES)
    np.testing.assert_allclose([r.value for r in found], expected, rtol=1e-9)
    assert found[2].value == pytest.approx(25.0)  # q = .15 is the CDF at an edge
    assert [r.probability for r in found] == LEVELS
    for r in found:
        assert EDGES[0] < r.ci_low <= r.value <= r.ci_high < EDGES[-1]
        assert EDGES[r.bin] <= r.value <= EDGES[r.bin + 1]


def _brute_force(g: np.ndarray, w: np.ndarray, q: float, z: float) -> tuple[float, float]:
    """The hull of {x : (F̂(x) − q)² <= z² Var F̂(x)} on a fine grid, with the gradient of
    F̂(x) built as a vector for every x."""
    lows, highs = [], []
    for k in range(g.size):
        t = np.linspace(0.0, 1.0, 20_001)
        gradient = np.zeros((t.size, g.size))
        gradient[:, :k] = 1.0
        gradient[:, k] = t
        value = gradient @ g
        variance = np.einsum("ti,ij,tj->t", gradient, w, gradient)
        ok = (value - q) ** 2 <= z * z * variance
        if ok.any():
            x = EDGES[k] + t[ok] * (EDGES[k + 1] - EDGES[k])
            lows.append(x.min())
            highs.append(x.max())
    return min(lows), max(highs)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.999])
def test_the_interval_is_the_inverted_band(mechanism: Any, confidence: float) -> None:
    n = 3_000
    values = seeded_rng(5).choice(6, size=n, p=TRUTH)
    stats = mechanism.accumulate(mechanism.perturb(values, seeded_rng(6)))
    f, v = _moments(mechanism, stats["counts"], n)
    g, w = normalised(f, v)
    for r in binned_quantiles(EDGES, f, v, LEVELS, confidence):
        low, high = _brute_force(g, w, r.probability, z_value(confidence))
        grid = (EDGES[-1] - EDGES[0]) / 20_000
        assert r.ci_low == pytest.approx(low, abs=grid) and r.ci_high == pytest.approx(
            high, abs=grid
        )


def test_wider_at_higher_confidence() -> None:
    f, v = _expected(GeneralizedRandomizedResponse(6, 1.0), n=2_000)
    narrow = binned_quantiles(EDGES, f, v, LEVELS, 0.8)
    wide = binned_quantiles(EDGES, f, v, LEVELS, 0.99)
    for a, b in zip(narrow, wide, strict=True):
        assert b.ci_low < a.ci_low <= a.value <= a.ci_high < b.ci_high


@pytest.mark.parametrize(
    "levels",
    [[], [0.0], [1.0], [0.5, -0.1], [math.nan], [math.inf], [0.5] * (MAX_PROBABILITIES + 1)],
)
def test_bad_levels(levels: list[float]) -> None:
    with pytest.raises(InvalidQueryError, match=r"quantile levels|1 to 99"):
        check_probabilities(levels)
    with pytest.raises(InvalidQueryError):
        binned_quantiles(EDGES, TRUTH, np.eye(6) * 1e-4, levels)


def test_bad_edges_and_confidence() -> None:
    with pytest.raises(InvalidQueryError, match="edges"):
        binned_quantiles(EDGES[:-1], TRUTH, np.eye(6), [0.5])
    with pytest.raises(InvalidQueryError, match="edges"):
        binned_quantiles(EDGES[::-1], TRUTH, np.eye(6), [0.5])
    with pytest.raises(InvalidQueryError, match="confidence"):
        binned_quantiles(EDGES, TRUTH, np.eye(6), [0.5], confidence=1.0)
    with pytest.raises(InvalidQueryError, match="numbers"):
        check_probabilities(["half"])
