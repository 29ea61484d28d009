"""Checks shared by the lattice mechanisms' statistical tests (``test_lattice``,
``test_gaussian``): answers against the integer channel with a power check, and the
released mean over repeated collections (unbiased, exact variance, coverage)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.integer_channel import integer_channel
from ldp_shared.mechanisms.lattice import LatticeRandomizer, MeanEstimate
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    assert_chi2_power,
    chi2_gof_rows,
    normal_two_sided_pvalue,
    pooled_noncentrality,
    variance_ratio_pvalue,
    wrong_epsilons,
)

PER_LEVEL = 40_000


def assert_channel_with_power(
    right: LatticeRandomizer, wrong_ideal: Callable[[float], FloatArray], seed: int
) -> None:
    """At the levels ``0, K/2, K`` the answers of ``right`` pass a χ² test against its
    channel, and the answers of ``wrong_ideal(ε·1.3)`` and ``wrong_ideal(ε/1.3)`` (ideal
    channels on the same lattice, quantised here) fail it, the design checked beforehand:
    the noncentral χ² clears the critical value by ``POWER_MARGIN_SD`` sd."""
    k, cells = right.channel.levels, right.channel.cells
    levels = sorted({0, k // 2, k})
    columns = right.channel.matrix[:, levels].T
    t = -1.0 + 2.0 * np.array(levels) / k
    rng = seeded_rng(seed)

    def observed(sampled: np.ndarray) -> np.ndarray:
        rows = sampled.reshape(len(levels), PER_LEVEL)
        return np.stack([np.bincount(r, minlength=cells) for r in rows])

    answers = right.perturb(np.repeat(t, PER_LEVEL), rng)
    assert chi2_gof_rows(observed(answers), columns).pvalue > ALPHA
    for wrong_eps in wrong_epsilons(right.epsilon):
        wrong = integer_channel(wrong_ideal(wrong_eps), math.inf)
        w_cols = wrong.matrix[:, levels].T
        pairs = zip(columns, w_cols, strict=True)
        lam = sum(pooled_noncentrality(PER_LEVEL, p, q) for p, q in pairs)
        assert_chi2_power(lam, len(levels) * (cells - 1))
        drawn = wrong.sample(np.repeat(np.array(levels), PER_LEVEL), rng)
        assert chi2_gof_rows(observed(drawn), columns).pvalue < ALPHA, wrong_eps


def repeated_counts(m: LatticeRandomizer, t: FloatArray, repetitions: int, seed: int) -> np.ndarray:
    """Cell counts (one row per repetition) of ``repetitions`` collections of the values ``t``."""
    n, cells = t.size, m.channel.cells
    answers = m.perturb(np.tile(t, repetitions), seeded_rng(seed)).reshape(repetitions, n)
    offsets = answers + cells * np.arange(repetitions)[:, None]
    return np.bincount(offsets.ravel(), minlength=cells * repetitions).reshape(repetitions, -1)


def ages_population(rng: np.random.Generator, n: int) -> FloatArray:
    """``t`` of ``n`` ages-like values: skewed, spread over the bounds [17, 90]."""
    ages = np.clip(17 + rng.gamma(4.0, 6.0, size=n), 17, 90)
    out: FloatArray = 2 * (ages - 17) / 73 - 1
    return out


def assert_mean_unbiased_exact_covering(
    m: LatticeRandomizer, t: FloatArray, repetitions: int, seed: int
) -> tuple[list[MeanEstimate], float]:
    """Over ``repetitions`` collections of the values ``t`` (``t`` itself as the value), the
    released mean is unbiased (z-test), its variance is the exact ``Σ_i Var(v_y | t_i)/n²``
    (χ² variance-ratio test) and the 95% intervals cover the truth 93–97% of the time.
    Returns the releases and the exact variance."""
    n, truth = t.size, float(t.mean())
    exact_var = float(m.channel.report_variance(t).sum()) / n**2
    counts = repeated_counts(m, t, repetitions, seed)
    released = [m.estimate_stats({"counts": c}, n, 0.95) for c in counts]
    means = np.array([r.estimate[0] for r in released])
    z = (means.mean() - truth) / math.sqrt(exact_var / repetitions)
    assert normal_two_sided_pvalue(z) > ALPHA, z
    assert variance_ratio_pvalue(float(means.var(ddof=1)), exact_var, repetitions) > ALPHA
    covered = [r.ci_low[0] <= truth <= r.ci_high[0] for r in released]
    assert 0.93 <= float(np.mean(covered)) <= 0.97
    return released, exact_var
