"""Ordinal summaries of a released estimate: the normalisation and its covariance."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.ibu import mean_rank, median_rank, ordinal_cdf
from ldp_shared.analyses.ordinal import normalised, ordinal_summary
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.mechanisms import (
    ExponentialRandomizer,
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
)
from ldp_shared.rand import seeded_rng

TRUTH = np.array([0.1, 0.2, 0.35, 0.25, 0.1])


def _sampled(mechanism: object, n: int = 5_000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    values = seeded_rng(seed).choice(TRUTH.size, size=n, p=TRUTH)
    answers = mechanism.perturb(values, seeded_rng(seed + 1))  # type: ignore[attr-defined]
    stats = mechanism.accumulate(answers)  # type: ignore[attr-defined]
    estimate = mechanism.estimate_stats(stats, n, 0.95).estimate  # type: ignore[attr-defined]
    return estimate, mechanism.frequency_covariance(stats, n)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "mechanism",
    [GeneralizedRandomizedResponse(5, 1.0), ExponentialRandomizer(5, 2.0, "ordinal")],
)
def test_estimates_that_sum_to_one_are_left_alone(mechanism: object) -> None:
    f, v = _sampled(mechanism)
    assert f.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(v.sum(axis=0), 0.0, atol=1e-12)  # V1 = 0
    g, w = normalised(f, v)
    np.testing.assert_allclose(g, f, rtol=1e-12)
    np.testing.assert_allclose(w, v, rtol=1e-9, atol=1e-15)


def test_unary_estimates_are_normalised_with_the_delta_method() -> None:
    f, v = _sampled(OptimizedUnaryEncoding(5, 1.0))
    assert abs(f.sum() - 1.0) > 1e-3  # unary encoding's total is noisy
    g, w = normalised(f, v)
    assert g.sum() == pytest.approx(1.0, abs=1e-15)
    step = 1e-7
    jacobian = np.stack(
        [
            (f + step * e) / (f + step * e).sum() - (f - step * e) / (f - step * e).sum()
            for e in np.eye(5)
        ],
        axis=1,
    ) / (2 * step)
    np.testing.assert_allclose(w, jacobian @ v @ jacobian.T, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(w.sum(axis=0), 0.0, atol=1e-12)  # the total is now exact


def test_summary_is_the_ibu_functions_on_the_normalised_estimate() -> None:
    f, v = _sampled(OptimizedUnaryEncoding(5, 2.0))
    summary = ordinal_summary(f, v)
    g, w = normalised(f, v)
    np.testing.assert_allclose(summary.cdf.cdf, ordinal_cdf(g, w).cdf)
    np.testing.assert_allclose(summary.cdf.stderr, ordinal_cdf(g, w).stderr)
    assert summary.cdf.cdf[-1] == pytest.approx(1.0) and summary.cdf.stderr[-1] < 1e-7
    assert summary.mean_rank == mean_rank(g, w)
    assert summary.median_rank == median_rank(g, w)


@pytest.mark.parametrize("total", [0.0, -0.3])
def test_no_normalisation_without_a_positive_total(total: float) -> None:
    f = np.array([0.5, -0.5 + total])
    with pytest.raises(InsufficientReportsError, match="sum to"):
        normalised(f, np.eye(2))
