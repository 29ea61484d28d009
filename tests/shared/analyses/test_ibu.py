"""Iterative Bayesian update and the ordinal summaries (CDF, mean rank, median)."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.ibu import (
    bayesian_update,
    iterative_bayesian_update,
    mean_rank,
    median_rank,
    ordinal_cdf,
)
from ldp_shared.errors import InvalidQueryError
from ldp_shared.mechanisms import (
    GeneralizedRandomizedResponse,
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
    UnaryEncoding,
)
from ldp_shared.mechanisms.exponential import ExponentialRandomizer
from ldp_shared.mechanisms.likelihood import DenseChannel, ReportChannel
from ldp_shared.rand import seeded_rng

TRUTH = np.array([0.05, 0.1, 0.3, 0.25, 0.15, 0.1, 0.04, 0.01])


def _mechanism(epsilon: float = 2.0) -> ExponentialRandomizer:
    return ExponentialRandomizer(TRUTH.size, epsilon, "ordinal")


@pytest.mark.parametrize(("utility", "epsilon"), [("ordinal", 4.0), ("equality", 1.0)])
def test_expected_counts_give_back_the_truth(utility: str, epsilon: float) -> None:
    m = ExponentialRandomizer(TRUTH.size, epsilon, utility)
    n = 100_000
    result = iterative_bayesian_update(m.channel_matrix(), n * (m.channel_matrix() @ TRUTH))
    assert result.converged and result.change <= 1e-10 and 1 < result.iterations < 10_000
    np.testing.assert_allclose(result.estimate, TRUTH, rtol=0.0, atol=1e-7)


def test_it_is_the_inversion_estimate_when_that_is_a_distribution() -> None:
    """IBU is the maximum-likelihood estimate on the simplex; an interior inversion
    estimate is the unconstrained maximum, so the two agree."""
    m = _mechanism(4.0)
    counts = np.bincount(m.perturb(np.repeat(np.arange(8), 20_000), seeded_rng(3)), minlength=8)
    inverted, _ = m.estimate_covariance(counts, int(counts.sum()))
    assert inverted.min() > 0.0
    result = iterative_bayesian_update(m.channel_matrix(), counts, tolerance=1e-12)
    assert result.converged
    np.testing.assert_allclose(result.estimate, inverted, rtol=0.0, atol=1e-8)


def test_a_consistent_distribution_where_inversion_goes_negative() -> None:
    m = _mechanism(0.5)
    values = seeded_rng(4).choice(8, size=300, p=TRUTH)
    counts = np.bincount(m.perturb(values, seeded_rng(5)), minlength=8)
    inverted, _ = m.estimate_covariance(counts, int(counts.sum()))
    assert inverted.min() < 0.0
    result = iterative_bayesian_update(m.channel_matrix(), counts)
    assert result.estimate.min() >= 0.0
    assert result.estimate.sum() == pytest.approx(1.0, abs=1e-12)


def test_each_step_raises_the_likelihood() -> None:
    m = _mechanism(1.0)
    counts = np.bincount(m.perturb(np.repeat(np.arange(8), 500), seeded_rng(6)), minlength=8)
    steps = [
        iterative_bayesian_update(m.channel_matrix(), counts, max_iterations=k).log_likelihood
        for k in range(1, 30)
    ]
    assert np.all(np.diff(steps) >= -1e-9)


def test_the_stopping_rule() -> None:
    m = _mechanism(2.0)
    counts = m.channel_matrix() @ TRUTH * 1e5
    early = iterative_bayesian_update(m.channel_matrix(), counts, max_iterations=3)
    assert (early.iterations, early.converged) == (3, False) and early.change > 1e-10
    loose = iterative_bayesian_update(m.channel_matrix(), counts, tolerance=1e-6)
    capped = iterative_bayesian_update(m.channel_matrix(), counts)  # 18,566 needed
    tight = iterative_bayesian_update(m.channel_matrix(), counts, max_iterations=30_000)
    assert loose.converged and loose.change <= 1e-6
    assert (capped.converged, capped.iterations) == (False, 10_000) and capped.change > 1e-10
    assert tight.converged and tight.change <= 1e-10 and 10_000 < tight.iterations < 30_000
    errors = [np.abs(r.estimate - TRUTH).sum() for r in (loose, capped, tight)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-6


def test_converges_to_the_truth_as_n_grows() -> None:
    """The L1 error falls like 1/sqrt(n): below three times the summed standard errors of
    the inversion estimate at every n, and by more than 3 times per factor 100 of n."""
    m = _mechanism()
    errors = []
    for i, n in enumerate([1_000, 10_000, 100_000, 1_000_000]):
        values = seeded_rng(10 + i).choice(8, size=n, p=TRUTH)
        counts = np.bincount(m.perturb(values, seeded_rng(20 + i)), minlength=8)
        estimate = iterative_bayesian_update(m.channel_matrix(), counts).estimate
        errors.append(float(np.abs(estimate - TRUTH).sum()))
        _, covariance = m.estimate_covariance(n * (m.channel_matrix() @ TRUTH), n)
        assert errors[-1] < 3.0 * np.sqrt(np.diag(covariance)).sum(), (n, errors)
    assert errors[2] < errors[0] / 3.0 and errors[3] < errors[1] / 3.0, errors


@pytest.mark.parametrize(
    ("channel", "counts"),
    [
        (np.ones(3), [1, 2, 3]),
        (np.full((2, 2), 0.6), [1, 1]),
        (np.array([[1.5, 0.5], [-0.5, 0.5]]), [1, 1]),
        (np.eye(2), [1, 2, 3]),
        (np.eye(2), [0, 0]),
        (np.eye(2), [1, -1]),
    ],
)
def test_ibu_refuses_bad_inputs(channel: np.ndarray, counts: list[int]) -> None:
    with pytest.raises(InvalidQueryError):
        iterative_bayesian_update(channel, counts)


def _moments() -> tuple[np.ndarray, np.ndarray]:
    m = _mechanism()
    n = 10_000
    return m.estimate_covariance(n * (m.channel_matrix() @ TRUTH), n)


def test_cdf_and_its_standard_errors() -> None:
    f, v = _moments()
    result = ordinal_cdf(f, v)
    np.testing.assert_allclose(result.cdf, np.cumsum(TRUTH), atol=1e-12)
    for k in range(8):
        ones = (np.arange(8) <= k).astype(float)
        expected = np.sqrt(max(ones @ v @ ones, 0.0))
        assert result.stderr[k] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # the estimate sums to 1 exactly (1ᵀM^-1 = 1ᵀ), so F at the last value has no error
    assert result.stderr[-1] < 1e-9


def test_mean_rank() -> None:
    f, v = _moments()
    result = mean_rank(f, v)
    ranks = np.arange(8.0)
    assert result.value == pytest.approx(ranks @ TRUTH, abs=1e-12)
    assert result.stderr == pytest.approx(np.sqrt(ranks @ v @ ranks), rel=1e-12)
    scored = mean_rank(f, v, ranks=ranks + 1.0)
    assert scored.value == pytest.approx(result.value + 1.0)
    assert scored.stderr == pytest.approx(result.stderr, rel=1e-9)  # Var(Σf̂) = 0
    with pytest.raises(InvalidQueryError):
        mean_rank(f, v, ranks=[1.0, 2.0])


def test_median_interpolates_and_its_delta_method_error() -> None:
    uniform = np.full(4, 0.25)
    assert median_rank(uniform, np.eye(4) * 1e-4).value == pytest.approx(1.5)
    f, v = _moments()
    result = median_rank(f, v)
    # F = .05, .15, .45, .70: the median lies in value 3, a fifth of its way in
    assert result.value == pytest.approx(3 - 0.5 + (0.5 - 0.45) / 0.25, abs=1e-9)
    # the gradient by finite differences
    step = 1e-7
    gradient = np.array(
        [
            (median_rank(f + step * e, v).value - median_rank(f - step * e, v).value) / (2 * step)
            for e in np.eye(8)
        ]
    )
    assert result.stderr == pytest.approx(np.sqrt(gradient @ v @ gradient), rel=1e-5)


def test_summaries_refuse_bad_inputs() -> None:
    f, v = _moments()
    with pytest.raises(InvalidQueryError):
        ordinal_cdf(f, v[:3])
    with pytest.raises(InvalidQueryError):
        mean_rank([1.0], [[0.0]])
    with pytest.raises(InvalidQueryError):
        median_rank(np.array([0.1, 0.1, 0.1]), np.eye(3))  # never reaches 1/2
    with pytest.raises(InvalidQueryError):
        ordinal_cdf(np.array([np.nan, 1.0]), np.eye(2))


# --- over a mechanism's channel, and SQUAREM ------------------------------------------


def _expected_channel(mechanism: object, n: int = 100_000) -> ReportChannel:
    """A mechanism's channel with the expected statistics of n reports from TRUTH."""
    if isinstance(mechanism, UnaryEncoding):
        ones = n * (mechanism.q + (mechanism.p - mechanism.q) * TRUTH)
        return mechanism.report_channel({"counts": ones}, n)
    assert isinstance(mechanism, ExponentialRandomizer | GeneralizedRandomizedResponse)
    return mechanism.report_channel({"counts": n * (mechanism.channel_matrix() @ TRUTH)}, n)


MECHANISMS = {
    "grr": GeneralizedRandomizedResponse(8, 1.0),
    "oue": OptimizedUnaryEncoding(8, 1.0),
    "sue": SymmetricUnaryEncoding(8, 2.0),
    "ordinal": ExponentialRandomizer(8, 2.0, "ordinal"),
}


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("accelerate", [False, True])
def test_every_channel_gives_back_the_truth_from_expected_statistics(
    name: str, accelerate: bool
) -> None:
    """Unary encoding's per-bit composite likelihood is maximised at the truth too."""
    result = bayesian_update(
        _expected_channel(MECHANISMS[name]), max_iterations=50_000, accelerate=accelerate
    )
    assert result.converged
    np.testing.assert_allclose(result.estimate, TRUTH, rtol=0.0, atol=1e-6)


@pytest.mark.parametrize(
    ("utility", "epsilon", "plain"),
    [("ordinal", 2.0, 18_566), ("ordinal", 1.0, 124_980), ("equality", 1.0, 4_043)],
)
def test_squarem_reaches_the_same_maximum_in_far_fewer_updates(
    utility: str, epsilon: float, plain: int
) -> None:
    m = ExponentialRandomizer(8, epsilon, utility)
    counts = m.channel_matrix() @ TRUTH * 1e5
    slow = iterative_bayesian_update(m.channel_matrix(), counts, max_iterations=200_000)
    fast = bayesian_update(DenseChannel(m.channel_matrix(), counts), accelerate=True)
    assert slow.iterations == plain and fast.converged and fast.iterations < plain / 15
    np.testing.assert_allclose(fast.estimate, slow.estimate, rtol=0.0, atol=2e-6)
    assert fast.log_likelihood >= slow.log_likelihood - 1e-6


def test_squarem_never_lowers_the_likelihood_and_keeps_the_budget() -> None:
    m = ExponentialRandomizer(8, 1.0, "ordinal")
    values = seeded_rng(30).choice(8, size=2_000, p=TRUTH)
    counts = np.bincount(m.perturb(values, seeded_rng(31)), minlength=8)
    channel = DenseChannel(m.channel_matrix(), counts)
    steps = [bayesian_update(channel, max_iterations=k, accelerate=True) for k in range(1, 60)]
    assert all(r.iterations <= k for k, r in enumerate(steps, start=1))
    assert np.all(np.diff([r.log_likelihood for r in steps]) >= -1e-9)
    assert all(r.estimate.min() >= 0.0 and r.estimate.sum() == pytest.approx(1.0) for r in steps)
