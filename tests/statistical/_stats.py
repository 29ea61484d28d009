"""Hypothesis tests for the statistical suite: numpy + the standard library only.

Every randomized test in ``tests/statistical`` uses

* a fixed seed (``ldp_shared.rand.seeded_rng``), so a run is repeatable;
* the fixed significance level :data:`ALPHA` for the whole test (a test made of ``m``
  sub-tests uses Bonferroni, ``ALPHA / m`` each), so the right mechanism is wrongly
  rejected with probability at most ``ALPHA`` per seed;
* a power check: the same test, still against the RIGHT parameters, must reject data
  drawn from a mechanism built with ε·1.3 or ε/1.3 (or from a deliberately broken
  sampler). :func:`assert_z_power` checks beforehand that the sample sizes make the
  power of a z-test practically one, so the sizes follow from the design, not from
  trying seeds.

The chi-square tail is computed exactly (regularised upper incomplete gamma for integer
or half-integer shape, by its finite series), not approximated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

ALPHA = 0.001
"""Significance level of every statistical test (per test, Bonferroni inside)."""

POWER_MARGIN_SD = 4.0
"""Design requirement: under the wrong parameter the expected |z| exceeds the critical
value by this many standard deviations (power ≥ Φ(4) ≈ 0.99997)."""

_N01 = NormalDist()


def normal_two_sided_pvalue(z: float) -> float:
    """``P(|Z| ≥ |z|)`` for a standard normal ``Z``."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def z_critical(alpha: float) -> float:
    """Two-sided critical value of a standard normal at level ``alpha``."""
    return _N01.inv_cdf(1.0 - alpha / 2.0)


def binomial_z(successes: int, trials: int, rate: float) -> float:
    """Standardised count ``(k - n r)/sqrt(n r (1-r))`` (normal approximation).

    Refuses designs where the approximation is poor (``n r (1-r) < 10``).
    """
    var = trials * rate * (1.0 - rate)
    assert var >= 10.0, f"binomial z-test needs n r (1-r) >= 10, got {var:.3g}"
    return (successes - trials * rate) / math.sqrt(var)


def binomial_pvalue(successes: int, trials: int, rate: float) -> float:
    """Two-sided p-value of ``successes`` out of ``trials`` Bernoulli(``rate``) draws."""
    return normal_two_sided_pvalue(binomial_z(successes, trials, rate))


def assert_z_power(trials: int, rate: float, wrong_rate: float, alpha: float) -> None:
    """Check the design: a z-test of ``rate`` on ``trials`` draws detects ``wrong_rate``.

    Under the wrong rate the statistic is about normal with mean
    ``(r' - r)·sqrt(n)/sqrt(r(1-r))`` and standard deviation
    ``sqrt(r'(1-r')/(r(1-r)))``; require the mean to clear the critical value by
    :data:`POWER_MARGIN_SD` of those standard deviations.
    """
    sd0 = math.sqrt(rate * (1.0 - rate))
    mean = abs(wrong_rate - rate) * math.sqrt(trials) / sd0
    sd = math.sqrt(wrong_rate * (1.0 - wrong_rate)) / sd0
    crit = z_critical(alpha)
    assert mean - crit >= POWER_MARGIN_SD * sd, (
        f"underpowered design: n={trials}, rate {rate} vs {wrong_rate}: "
        f"E|z|={mean:.2f}, critical {crit:.2f}"
    )


def chi2_sf(x: float, df: int) -> float:
    """Exact upper tail ``P(χ²_df ≥ x)`` for an integer number of degrees of freedom.

    Even ``df``: ``e^{-h} Σ_{i<df/2} h^i/i!``; odd ``df``: ``erfc(√h) + e^{-h}
    Σ_{i=1}^{(df-1)/2} h^{i-1/2}/Γ(i+1/2)``, with ``h = x/2`` (terms summed in log space).
    """
    assert df >= 1
    if x <= 0.0:
        return 1.0
    h = x / 2.0
    log_h = math.log(h)
    if df % 2 == 0:
        terms = [math.exp(-h + i * log_h - math.lgamma(i + 1.0)) for i in range(df // 2)]
        head = 0.0
    else:
        terms = [
            math.exp(-h + (i - 0.5) * log_h - math.lgamma(i + 0.5)) for i in range(1, (df + 1) // 2)
        ]
        head = math.erfc(math.sqrt(h))
    return min(1.0, head + math.fsum(terms))


def chi2_cdf(x: float, df: int) -> float:
    """``P(χ²_df ≤ x)``."""
    return 1.0 - chi2_sf(x, df)


def chi2_quantile(prob: float, df: int) -> float:
    """``x`` with ``P(χ²_df ≤ x) = prob`` (bisection on :func:`chi2_sf`)."""
    lo, hi = 0.0, float(df)
    while chi2_cdf(hi, df) < prob:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if chi2_cdf(mid, df) < prob:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Chi2Result:
    statistic: float
    df: int
    pvalue: float


MIN_EXPECTED = 5.0
"""Cells expected below this are pooled (the usual validity rule of the χ² test)."""


def _pool_row(observed: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge the cells expected below :data:`MIN_EXPECTED` into one (and, if that cell is
    still too small, into the smallest remaining cell)."""
    small = expected < MIN_EXPECTED
    if not small.any():
        return observed, expected
    obs = list(observed[~small])
    exp = list(expected[~small])
    pooled_o, pooled_e = float(observed[small].sum()), float(expected[small].sum())
    if pooled_e < MIN_EXPECTED and exp:
        j = int(np.argmin(exp))
        pooled_o += obs.pop(j)
        pooled_e += exp.pop(j)
    obs.append(pooled_o)
    exp.append(pooled_e)
    return np.asarray(obs, dtype=np.float64), np.asarray(exp, dtype=np.float64)


def chi2_gof(observed: ArrayLike, probabilities: ArrayLike, pool: bool = True) -> Chi2Result:
    """Pearson goodness of fit of one multinomial sample to known cell probabilities.

    ``observed`` and ``probabilities`` have the same shape; the total is fixed by design,
    so ``df = cells - 1`` (after pooling small cells).
    """
    return chi2_gof_rows(
        np.atleast_2d(np.asarray(observed)), np.atleast_2d(np.asarray(probabilities)), pool
    )


def chi2_gof_rows(observed: ArrayLike, probabilities: ArrayLike, pool: bool = True) -> Chi2Result:
    """Sum of independent per-row goodness-of-fit tests (row totals fixed by design).

    Row ``i`` of ``observed`` is a multinomial sample over the cells of row ``i`` of
    ``probabilities`` (each row sums to one); ``df = Σ_i (cells_i - 1)``.
    """
    obs = np.asarray(observed, dtype=np.float64)
    prob = np.asarray(probabilities, dtype=np.float64)
    assert obs.shape == prob.shape and obs.ndim == 2
    assert np.allclose(prob.sum(axis=1), 1.0, rtol=0.0, atol=1e-9)
    statistic = 0.0
    df = 0
    for o_row, p_row in zip(obs, prob, strict=True):
        e_row = o_row.sum() * p_row
        keep = e_row > 0.0
        assert not np.any(o_row[~keep]), "an impossible cell was observed"
        o, e = o_row[keep], e_row[keep]
        if pool:
            o, e = _pool_row(o, e)
        else:
            assert np.all(e >= MIN_EXPECTED), "expected counts too small for a χ² test"
        statistic += float(np.sum((o - e) ** 2 / e))
        df += o.size - 1
    assert df >= 1
    return Chi2Result(statistic, df, chi2_sf(statistic, df))


def variance_ratio_pvalue(sample_variance: float, true_variance: float, repetitions: int) -> float:
    """Two-sided p-value of ``(R-1) s² / σ² ~ χ²_{R-1}`` (normal data)."""
    df = repetitions - 1
    statistic = df * sample_variance / true_variance
    return min(1.0, 2.0 * min(chi2_sf(statistic, df), chi2_cdf(statistic, df)))


def assert_variance_power(ratio: float, repetitions: int, alpha: float) -> None:
    """Check the design: a variance-ratio test on ``R`` repetitions detects ``σ'²/σ² = ratio``.

    Under the alternative ``(R-1)s²/σ² ~ ratio·χ²_{R-1}``; require the
    ``Φ(-POWER_MARGIN_SD)`` quantile of that (on the side towards the null) to lie
    beyond the critical value.
    """
    df = repetitions - 1
    tail = _N01.cdf(-POWER_MARGIN_SD)
    if ratio > 1.0:
        critical = chi2_quantile(1.0 - alpha / 2.0, df)
        assert ratio * chi2_quantile(tail, df) > critical, f"underpowered: ratio {ratio:.3f}"
    else:
        critical = chi2_quantile(alpha / 2.0, df)
        assert ratio * chi2_quantile(1.0 - tail, df) < critical, f"underpowered: ratio {ratio:.3f}"


def bonferroni_reject(pvalues: Sequence[float], alpha: float = ALPHA) -> bool:
    """Whether a family of ``m`` p-values rejects at ``alpha`` (any ``p < alpha/m``)."""
    return min(pvalues) < alpha / len(pvalues)


def wrong_epsilons(epsilon: float) -> list[float]:
    """The two mis-calibrated budgets every power check uses."""
    return [epsilon * 1.3, epsilon / 1.3]


def pooled_noncentrality(n: float, p: ArrayLike, q: ArrayLike) -> float:
    """The noncentrality ``n Σ (q − p)²/p`` of a χ² test of ``n`` draws from ``q`` against
    ``p``, over the cells expected at least 5 (the rest pooled, as :func:`chi2_gof` does)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    big = n * p >= 5
    lam = n * float(np.sum((q[big] - p[big]) ** 2 / p[big]))
    rest_p, rest_q = float(p[~big].sum()), float(q[~big].sum())
    return lam + (n * (rest_q - rest_p) ** 2 / rest_p if rest_p > 0 else 0.0)


def assert_chi2_power(lam: float, df: int, alpha: float = ALPHA) -> None:
    """Check the design: a noncentral χ²(df, lam) clears the critical value at ``alpha``
    by :data:`POWER_MARGIN_SD` standard deviations."""
    crit = chi2_quantile(1 - alpha, df)
    assert df + lam - POWER_MARGIN_SD * math.sqrt(2 * (df + 2 * lam)) > crit, (lam, df)
