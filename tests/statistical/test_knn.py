"""kNN cell protocol: the debiased class scores are unbiased with the stated variance.

On a fixed set of 2,000 records (3 standard normal features, 2 classes) and 6 fixed
query points, one table of 4 hyperplanes (32 joint values), Hamming radius 1 (5 cells
per ball): ``R`` fresh rounds of reports, each scored. For each (query, class) the
standardised error ``e = (ŝ − m)/σ(m)``, ``m`` the true count in the ball (the noise-off
protocol, itself checked against brute force in tests/shared) and ``σ`` the stated
standard error at the true count (:func:`ldp_shared.analyses.knn.set_sum_variance`):

* bias: ``√R·mean(e) ~ N(0, 1)``;
* variance: ``(R − 1)·var(e) ~ χ²_{R−1}``;

two-sided, Bonferroni over the 12 cells and the two tests, at ``ALPHA``. Both oracles:
OUE (ε = 1, where ``d = 32 ≥ 3e + 2``) and GRR (ε = 3). The released plug-in standard
errors are also checked to be within 10% of the true-count ones on average.

Power: reports made at ε·1.3 or ε/1.3 and debiased with the RIGHT ε must be rejected;
the design (the expected ``|z|`` of the bias under the wrong ε) is checked first.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses.knn import CellProtocol, set_sum_variance
from ldp_shared.rand import seeded_rng

from ._stats import (
    ALPHA,
    POWER_MARGIN_SD,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    wrong_epsilons,
    z_critical,
)

pytestmark = pytest.mark.statistical

N, QUERIES, ROUNDS, BITS, RADIUS = 2_000, 6, 200, 4, 1
BALL = 1 + BITS
SEED = 20_261_123


def records() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = seeded_rng(SEED)
    z = rng.standard_normal((N, 3))
    y = (z[:, 0] - z[:, 1] > 0.3).astype(np.int64)
    return z, y, rng.standard_normal((QUERIES, 3))


def truth(z: np.ndarray, y: np.ndarray, q: np.ndarray) -> np.ndarray:
    exact = CellProtocol(3, 2, 1.0, tables=1, bits=BITS, noiseless=True)
    counts = exact.empty_counts()
    exact.accumulate(counts, *exact.report(z, y, seeded_rng(0)))
    return exact.scores(counts, q, radius=RADIUS).scores


def standardised_errors(
    report_epsilon: float, epsilon: float, seed: int
) -> tuple[np.ndarray, float]:
    """``R × cells`` errors of scores debiased at ``epsilon`` from reports made at
    ``report_epsilon``, and the mean ratio of released to true-count standard errors."""
    z, y, q = records()
    m = truth(z, y, q)
    sender = CellProtocol(3, 2, report_epsilon, tables=1, bits=BITS)
    receiver = CellProtocol(3, 2, epsilon, tables=1, bits=BITS)
    assert sender.oracle == receiver.oracle
    sigma = np.sqrt(set_sum_variance(receiver.oracle, m, N, BALL, receiver.p, receiver.q))
    rng = seeded_rng(seed)
    errors, ratios = [], []
    for _ in range(ROUNDS):
        counts = receiver.empty_counts()
        receiver.accumulate(counts, *sender.report(z, y, rng))
        scores = receiver.scores(counts, q, radius=RADIUS)
        errors.append(((scores.scores - m) / sigma).ravel())
        ratios.append(float(np.mean(scores.stderr / sigma)))
    return np.array(errors), float(np.mean(ratios))


def pvalues(errors: np.ndarray) -> list[float]:
    r = errors.shape[0]
    bias = [normal_two_sided_pvalue(math.sqrt(r) * float(e.mean())) for e in errors.T]
    spread = [variance_ratio_pvalue(float(e.var(ddof=1)), 1.0, r) for e in errors.T]
    return bias + spread


def expected_bias_z(epsilon: float, wrong: float) -> float:
    """The largest expected ``√R·|mean e|`` over the cells under reports at ``wrong``."""
    z, y, q = records()
    m = truth(z, y, q)
    right = CellProtocol(3, 2, epsilon, tables=1, bits=BITS)
    made = CellProtocol(3, 2, wrong, tables=1, bits=BITS)
    if right.oracle == "oue":
        mean_sum = m * made.p + (N * BALL - m) * made.q
    else:
        mean_sum = m * (made.p + (BALL - 1) * made.q) + (N - m) * BALL * made.q
    bias = (mean_sum - N * BALL * right.q) / (right.p - right.q) - m
    sigma = np.sqrt(set_sum_variance(right.oracle, m, N, BALL, right.p, right.q))
    return float(np.max(np.abs(bias) / sigma)) * math.sqrt(ROUNDS)


@pytest.mark.parametrize(("epsilon", "oracle"), [(1.0, "oue"), (3.0, "grr")])
def test_scores_unbiased_with_stated_variance(epsilon: float, oracle: str) -> None:
    assert CellProtocol(3, 2, epsilon, tables=1, bits=BITS).oracle == oracle
    errors, ratio = standardised_errors(epsilon, epsilon, SEED + 1)
    p = pvalues(errors)
    assert min(p) >= ALPHA / len(p), min(p)
    assert ratio == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_power_wrong_epsilon_is_rejected(epsilon: float) -> None:
    for k, wrong in enumerate(wrong_epsilons(epsilon)):
        cells = 2 * QUERIES * 2
        assert expected_bias_z(epsilon, wrong) > z_critical(ALPHA / cells) + POWER_MARGIN_SD
        errors, _ = standardised_errors(wrong, epsilon, SEED + 10 + k)
        p = pvalues(errors)
        assert min(p) < ALPHA / len(p)
