"""The lattice numeric mechanisms against their integer channels and their variance formula.

* Channel: at the levels ``k = 0, K/2, K`` the answers are multinomial over the cells
  with the channel's column (χ² per level, summed); power: the same test rejects the
  answers of the channel built with ε·1.3 and ε/1.3 on the same lattice (its design
  checked beforehand from the noncentrality).
* Estimator: over R repetitions of n = 10⁴ reports from a fixed population, the mean is
  unbiased (z-test), its variance is the exact ``Σ_i Var(v_y | t_i)/n²`` (rounding
  included; χ² variance-ratio test), and the released 95% intervals cover the truth
  93–97% of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms import HybridRandomizer, LaplaceRandomizer, PiecewiseRandomizer
from ldp_shared.mechanisms.hybrid import PM_CELLS, hybrid_channel
from ldp_shared.mechanisms.integer_channel import integer_channel
from ldp_shared.mechanisms.laplace import laplace_channel
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.piecewise import CELLS, piecewise_channel
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    chi2_gof_rows,
    chi2_quantile,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
)

pytestmark = pytest.mark.statistical

SEED = 7_400_001
PER_LEVEL = 40_000
CASES = [("piecewise", 1.0), ("piecewise", 4.0), ("hybrid", 1.0), ("hybrid", 4.0)]
CASES += [("laplace", 1.0), ("laplace", 4.0)]
KINDS: dict[str, type[LatticeRandomizer]] = {
    "piecewise": PiecewiseRandomizer,
    "hybrid": HybridRandomizer,
    "laplace": LaplaceRandomizer,
}


def ideal_on_lattice(name: str, epsilon: float, right: LatticeRandomizer) -> FloatArray:
    """The ideal channel at ``epsilon`` on the lattice of ``right`` (same K and G)."""
    k = right.channel.levels
    if name == "piecewise":
        return piecewise_channel(epsilon, k, CELLS)
    if name == "hybrid":
        return hybrid_channel(epsilon, k, PM_CELLS)
    margin = (right.channel.cells - 1 - k) // 2
    return laplace_channel(epsilon, k, margin)


def _pooled_noncentrality(n: int, p: FloatArray, q: FloatArray) -> float:
    """``n Σ (q − p)²/p`` over the cells expected at least 5 (the rest pooled)."""
    big = n * p >= 5
    lam = n * float(np.sum((q[big] - p[big]) ** 2 / p[big]))
    rest_p, rest_q = float(p[~big].sum()), float(q[~big].sum())
    return lam + (n * (rest_q - rest_p) ** 2 / rest_p if rest_p > 0 else 0.0)


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_answers_follow_the_integer_channel_and_a_wrong_epsilon_is_caught(
    name: str, epsilon: float
) -> None:
    right = KINDS[name](epsilon=epsilon, lo=-1.0, hi=1.0)
    k = right.channel.levels
    levels = sorted({0, k // 2, k})
    columns = right.channel.matrix[:, levels].T
    t = -1.0 + 2.0 * np.array(levels) / k
    rng = seeded_rng(SEED)

    def observed(sampled: np.ndarray) -> np.ndarray:
        rows = sampled.reshape(len(levels), PER_LEVEL)
        return np.stack([np.bincount(r, minlength=right.channel.cells) for r in rows])

    answers = right.perturb(np.repeat(t, PER_LEVEL), rng)
    assert chi2_gof_rows(observed(answers), columns).pvalue > ALPHA
    for wrong_eps in wrong_epsilons(epsilon):
        wrong = integer_channel(ideal_on_lattice(name, wrong_eps, right), math.inf)
        w_cols = wrong.matrix[:, levels].T
        # design: the noncentral χ² clears the critical value by POWER_MARGIN_SD sd
        pairs = zip(columns, w_cols, strict=True)
        lam = sum(_pooled_noncentrality(PER_LEVEL, p, q) for p, q in pairs)
        df = len(levels) * (right.channel.cells - 1)
        crit = chi2_quantile(1 - ALPHA, df)
        assert df + lam - POWER_MARGIN_SD * math.sqrt(2 * (df + 2 * lam)) > crit, (lam, df)
        drawn = wrong.sample(np.repeat(np.array(levels), PER_LEVEL), rng)
        assert chi2_gof_rows(observed(drawn), columns).pvalue < ALPHA, wrong_eps


REPETITIONS = 2_000
N = 10_000


def _population(rng: np.random.Generator) -> np.ndarray:
    ages = np.clip(17 + rng.gamma(4.0, 6.0, size=N), 17, 90)
    return 2 * (ages - 17) / 73 - 1


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_the_mean_is_unbiased_its_variance_exact_and_its_intervals_cover(
    name: str, epsilon: float
) -> None:
    t = _population(np.random.default_rng(SEED + 1))
    truth = float(t.mean())
    m = KINDS[name](epsilon=epsilon, lo=-1.0, hi=1.0)  # t itself is the value
    exact_var = float(m.channel.report_variance(t).sum()) / N**2
    cells = m.channel.cells
    answers = m.perturb(np.tile(t, REPETITIONS), seeded_rng(SEED + 2)).reshape(REPETITIONS, N)
    offsets = answers + cells * np.arange(REPETITIONS)[:, None]
    counts = np.bincount(offsets.ravel(), minlength=cells * REPETITIONS).reshape(REPETITIONS, -1)
    released = [m.estimate_stats({"counts": c}, N, 0.95) for c in counts]
    means = np.array([r.estimate[0] for r in released])
    z = (means.mean() - truth) / math.sqrt(exact_var / REPETITIONS)
    assert normal_two_sided_pvalue(z) > ALPHA, z
    assert variance_ratio_pvalue(float(means.var(ddof=1)), exact_var, REPETITIONS) > ALPHA
    covered = [r.ci_low[0] <= truth <= r.ci_high[0] for r in released]
    assert 0.93 <= float(np.mean(covered)) <= 0.97
    spreads = [r.value_variance for r in released]
    if m.channel.levels >= 16:  # the spread of the values, within its rounding bias
        spread = np.array([s[0] for s in spreads if s is not None])
        assert spread.size == REPETITIONS
        bias_bound = 1.0 / m.channel.levels**2
        sd = float(spread.std(ddof=1)) / math.sqrt(REPETITIONS)
        assert -5 * sd <= spread.mean() - float(t.var()) <= bias_bound + 5 * sd
    else:
        assert all(s is None for s in spreads)
