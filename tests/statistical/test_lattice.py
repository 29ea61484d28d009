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
from ldp_shared.mechanisms.laplace import laplace_channel
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.piecewise import CELLS, piecewise_channel

from ._lattice_checks import (
    ages_population,
    assert_channel_with_power,
    assert_mean_unbiased_exact_covering,
)

pytestmark = pytest.mark.statistical

SEED = 7_400_001
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


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_answers_follow_the_integer_channel_and_a_wrong_epsilon_is_caught(
    name: str, epsilon: float
) -> None:
    right = KINDS[name](epsilon=epsilon, lo=-1.0, hi=1.0)
    assert_channel_with_power(right, lambda eps: ideal_on_lattice(name, eps, right), SEED)


REPETITIONS = 2_000
N = 10_000


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_the_mean_is_unbiased_its_variance_exact_and_its_intervals_cover(
    name: str, epsilon: float
) -> None:
    t = ages_population(np.random.default_rng(SEED + 1), N)
    m = KINDS[name](epsilon=epsilon, lo=-1.0, hi=1.0)  # t itself is the value
    released, _ = assert_mean_unbiased_exact_covering(m, t, REPETITIONS, SEED + 2)
    spreads = [r.value_variance for r in released]
    if m.channel.levels >= 16:  # the spread of the values, within its rounding bias
        spread = np.array([s[0] for s in spreads if s is not None])
        assert spread.size == REPETITIONS
        bias_bound = 1.0 / m.channel.levels**2
        sd = float(spread.std(ddof=1)) / math.sqrt(REPETITIONS)
        assert -5 * sd <= spread.mean() - float(t.var()) <= bias_bound + 5 * sd
    else:
        assert all(s is None for s in spreads)
