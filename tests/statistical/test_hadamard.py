"""Hadamard randomized response against its stated channel and estimator, with power checks.

A fixed data set of ``N`` values (exact frequencies ``f``) is perturbed afresh ``R``
times (one batch of ``R·N`` reports).

* Keep rate: the reports whose sign equals ``H[j, v]`` are Binomial(``R·N``, ``p``).
* Whole channel: the table of (true value, output ``2j + s``) against
  ``P(j, s | v) = p/D`` or ``q/D`` (per-row χ²).
* Estimator: over the ``R`` estimates, ``mean(f̂_v)`` against ``f_v`` (z-tests) and
  ``(R−1)s²_v/σ²_v ~ χ²_{R−1}`` with ``σ²_v = (1/(p−q)² − f_v)/N``, the stated variance
  (two-sided), Bonferroni over the ``2d`` tests.

Power: every test, still against the RIGHT ε, rejects reports made at ε·1.3 and ε/1.3;
the sizes are checked first (:func:`assert_z_power`, :func:`assert_chi2_power`, and the
z-test's design below). The variance test also rejects the variance of values drawn
i.i.d. from ``f``, ``(1/(p−q)² − f_v²)/N``, which is not that of a fixed data set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import NDArray

from ldp_shared.mechanisms import HadamardResponse
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    assert_chi2_power,
    assert_variance_power,
    assert_z_power,
    binomial_pvalue,
    bonferroni_reject,
    chi2_gof_rows,
    normal_two_sided_pvalue,
    pooled_noncentrality,
    variance_ratio_pvalue,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

SEED = 4_242_001


@dataclass(frozen=True)
class Case:
    epsilon: float
    counts: tuple[int, ...]  # of each value in the data set; N = their sum
    repetitions: int

    @property
    def d(self) -> int:
        return len(self.counts)

    @property
    def n(self) -> int:
        return sum(self.counts)

    @property
    def f(self) -> NDArray[np.float64]:
        return np.array(self.counts) / self.n

    def data(self) -> NDArray[np.int64]:
        return np.repeat(np.arange(self.d, dtype=np.int64), self.counts)


CASES = {
    "d5-eps1": Case(1.0, (800, 600, 400, 200, 0), 500),  # D = 8
    "d37-eps4": Case(4.0, (400, 200, 100, *[10] * 30, 0, 0, 0, 0), 2000),  # D = 64
}


def hadamard(size: int) -> NDArray[np.int64]:
    """``H[j, v] = (−1)^{popcount(j & v)}``, written independently of the module."""
    return np.array([[(-1) ** bin(j & v).count("1") for v in range(size)] for j in range(size)])


@dataclass(frozen=True)
class Run:
    values: NDArray[np.int64]  # R·N true values
    codes: NDArray[np.int64]  # their reports, 2j + s


def simulate(case: Case, epsilon: float, seed: int) -> Run:
    values = np.tile(case.data(), case.repetitions)
    return Run(values, HadamardResponse(case.d, epsilon).perturb(values, seeded_rng(seed)))


def keep_pvalue(right: HadamardResponse, run: Run) -> float:
    true_sign = hadamard(right.rows)[run.codes >> 1, run.values]
    kept = int(np.sum((run.codes & 1) == (true_sign == 1)))
    return binomial_pvalue(kept, run.values.size, right.p)


def channel_rows(m: HadamardResponse) -> NDArray[np.float64]:
    """Row ``v``: ``P(output 2j + s | v)`` over the ``2D`` outputs."""
    signs = hadamard(m.rows)[:, : m.d].T
    out = np.empty((m.d, 2 * m.rows))
    out[:, 1::2] = np.where(signs == 1, m.p, m.q) / m.rows
    out[:, 0::2] = np.where(signs == -1, m.p, m.q) / m.rows
    return out


def channel_pvalue(right: HadamardResponse, run: Run) -> float:
    cells = 2 * right.rows
    table = np.bincount(run.values * cells + run.codes, minlength=right.d * cells)
    table = table.reshape(right.d, cells)
    held = table.sum(axis=1) > 0
    return chi2_gof_rows(table[held], channel_rows(right)[held]).pvalue


def estimates(right: HadamardResponse, case: Case, run: Run) -> NDArray[np.float64]:
    """The ``R × d`` estimates, each from one repetition's statistics."""
    rows = run.codes.reshape(case.repetitions, case.n)
    return np.array(
        [right.estimate_stats(right.accumulate(row), case.n, 0.95).estimate for row in rows]
    )


def moment_pvalues(
    f_hat: NDArray[np.float64], f: NDArray[np.float64], variance: NDArray[np.float64]
) -> tuple[list[float], list[float]]:
    reps = f_hat.shape[0]
    mean, s2 = f_hat.mean(axis=0), f_hat.var(axis=0, ddof=1)
    bias = [
        normal_two_sided_pvalue((m - t) / math.sqrt(v / reps))
        for m, t, v in zip(mean, f, variance, strict=True)
    ]
    spread = [
        variance_ratio_pvalue(float(s), float(v), reps) for s, v in zip(s2, variance, strict=True)
    ]
    return bias, spread


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]


def test_keep_rate(case: Case) -> None:
    assert (
        keep_pvalue(HadamardResponse(case.d, case.epsilon), simulate(case, case.epsilon, SEED))
        >= ALPHA
    )


def test_keep_rate_power(case: Case) -> None:
    right = HadamardResponse(case.d, case.epsilon)
    for k, wrong_eps in enumerate(wrong_epsilons(case.epsilon)):
        assert_z_power(
            case.n * case.repetitions, right.p, HadamardResponse(case.d, wrong_eps).p, ALPHA
        )
        assert keep_pvalue(right, simulate(case, wrong_eps, SEED + 1 + k)) < ALPHA, wrong_eps


def test_whole_channel(case: Case) -> None:
    right = HadamardResponse(case.d, case.epsilon)
    assert channel_pvalue(right, simulate(case, case.epsilon, SEED + 3)) >= ALPHA


def test_whole_channel_power(case: Case) -> None:
    right = HadamardResponse(case.d, case.epsilon)
    held = case.f > 0
    reports = case.f[held] * case.n * case.repetitions
    for k, wrong_eps in enumerate(wrong_epsilons(case.epsilon)):
        wrong = HadamardResponse(case.d, wrong_eps)
        lam = sum(
            pooled_noncentrality(n_v, p_v, q_v)
            for n_v, p_v, q_v in zip(
                reports, channel_rows(right)[held], channel_rows(wrong)[held], strict=True
            )
        )
        assert_chi2_power(lam, int(held.sum()) * (2 * right.rows - 1))
        assert channel_pvalue(right, simulate(case, wrong_eps, SEED + 4 + k)) < ALPHA, wrong_eps


def test_unbiased_with_the_stated_variance(case: Case) -> None:
    right = HadamardResponse(case.d, case.epsilon)
    f_hat = estimates(right, case, simulate(case, case.epsilon, SEED + 6))
    bias, spread = moment_pvalues(f_hat, case.f, right.variance(case.f, case.n))
    assert not bonferroni_reject(bias + spread, ALPHA), (bias, spread)


def test_wrong_epsilon_is_rejected(case: Case) -> None:
    """Reports made at ε·1.3 or ε/1.3, estimated with the ε-parameters: ``E f̂_v =
    r·f_v`` with ``r = (p′ − q′)/(p − q)``, and ``Var f̂_v = (1/(p − q)² − r²f_v)/N``."""
    right = HadamardResponse(case.d, case.epsilon)
    stated = right.variance(case.f, case.n)
    top = int(np.argmax(case.f))
    for k, wrong_eps in enumerate(wrong_epsilons(case.epsilon)):
        wrong = HadamardResponse(case.d, wrong_eps)
        r = (wrong.p - wrong.q) / (right.p - right.q)
        # design: the z-test of the most frequent value alone clears its critical value
        sd_null = math.sqrt(stated[top] / case.repetitions)
        var_alt = (1 / (right.p - right.q) ** 2 - r**2 * case.f[top]) / case.n
        shift = abs(r - 1) * case.f[top] / sd_null
        margin = POWER_MARGIN_SD * math.sqrt(var_alt / stated[top])
        assert shift - z_critical(ALPHA / (2 * case.d)) >= margin, (wrong_eps, shift)
        f_hat = estimates(right, case, simulate(case, wrong_eps, SEED + 7 + k))
        bias, spread = moment_pvalues(f_hat, case.f, stated)
        assert bonferroni_reject(bias + spread, ALPHA), wrong_eps


def test_the_iid_variance_is_rejected() -> None:
    """The variance is that of the ``N`` reporters' own values, ``(1/(p−q)² − f_v)/N``; the
    variance about ``f`` of values drawn i.i.d., ``(1/(p−q)² − f_v²)/N``, is larger."""
    case = CASES["d37-eps4"]
    right = HadamardResponse(case.d, case.epsilon)
    iid = (1 / (right.p - right.q) ** 2 - case.f**2) / case.n
    ratio = float(np.min(right.variance(case.f, case.n) / iid))
    assert_variance_power(ratio, case.repetitions, ALPHA / case.d)
    f_hat = estimates(right, case, simulate(case, case.epsilon, SEED + 6))
    _, spread = moment_pvalues(f_hat, case.f, iid)
    assert bonferroni_reject(spread, ALPHA), spread
