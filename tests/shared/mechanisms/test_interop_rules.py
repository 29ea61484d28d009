"""What a client written from docs/wire-format.md alone must reproduce, checked against a
second implementation written from the docs: the canonical expression of every published
float (bit for bit), the integer weights' remainder rule (every unit placed as the docs
say, including shortfalls larger than a column), and the discrete Gaussian's δ, rebuilt
in 50-digit decimal arithmetic from the published fields, within the stated tolerance.

The second implementations below use only ``math``, ``decimal`` and lists: no code of
``ldp_shared`` other than what builds the configuration under test."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import GaussianRandomizer
from ldp_shared.mechanisms.exponential import calibrate as exponential_scale
from ldp_shared.mechanisms.exponential import ideal_channel, utility_matrix
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.integer_channel import TOTAL, quantise
from ldp_shared.mechanisms.unary import UnaryEncoding, UnaryVariant

getcontext().prec = 50
EPSILONS = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]


# -- 1. canonical expressions (docs/wire-format.md, "Canonical expressions") -----------


def doc_grr(d: int, epsilon: float) -> tuple[float, float, float]:
    t = math.exp(-epsilon)
    denom = 1.0 + (d - 1) * t
    p, q = 1.0 / denom, t / denom
    return p, q, math.log(p / q)


def doc_unary(variant: str, epsilon: float) -> tuple[float, float, float]:
    x = epsilon / 2.0 if variant == "sue" else epsilon
    t = math.exp(-x)
    q = t / (1.0 + t)
    p = 1.0 - q if variant == "sue" else 0.5
    return p, q, math.log(p / q) + math.log((1.0 - q) / (1.0 - p))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("d", [2, 6, 1024])
def test_grr_published_floats_are_the_documented_expressions(d: int, epsilon: float) -> None:
    grr = GeneralizedRandomizedResponse(d=d, epsilon=epsilon)
    assert (grr.p, grr.q, grr.exact_epsilon) == doc_grr(d, epsilon)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("variant", ["sue", "oue"])
def test_unary_published_floats_are_the_documented_expressions(
    variant: UnaryVariant, epsilon: float
) -> None:
    ue = UnaryEncoding(d=8, epsilon=epsilon, variant=variant)
    assert (ue.p, ue.q, ue.exact_epsilon) == doc_unary(variant, epsilon)


def test_oue_at_one_half_is_the_documented_last_digit() -> None:
    """The value a client reported as differing: published 0.4999999999999997."""
    assert UnaryEncoding(d=8, epsilon=0.5, variant="oue").exact_epsilon == 0.4999999999999997
    # the algebraically equal one-log form gives another last digit, hence "canonical"
    p, q, _ = doc_unary("oue", 0.5)
    assert math.log(p * (1 - q) / ((1 - p) * q)) != 0.4999999999999997


def doc_channel_epsilon(weights: list[list[int]]) -> float:
    """max over outputs y of ln(max_x W[y,x]/2^53) − ln(min_x W[y,x]/2^53), each ln of
    the double W/2^53 (exact), the difference taken in doubles."""
    best = -math.inf
    for row in weights:
        hi, lo = max(row) / 2.0**53, min(row) / 2.0**53
        best = max(best, math.log(hi) - math.log(lo))
    return best


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("utility", ["equality", "ordinal"])
def test_exponential_epsilon_is_the_documented_expression(utility: str, epsilon: float) -> None:
    matrix = utility_matrix(utility, 6)
    weights = quantise(ideal_channel(matrix, exponential_scale(matrix, epsilon, "tight")))
    published = channel_epsilon(weights / float(TOTAL))
    assert published == doc_channel_epsilon(weights.tolist())


# -- 2. the remainder rule ---------------------------------------------------------------


def doc_quantise_column(column: list[float]) -> list[int]:
    """docs/wire-format.md: ⌊2^53·P⌋ (at least 1); a shortfall s over n entries gives every
    entry ⌊s/n⌋ units and one more to the s mod n entries of largest remainder (ties by
    lower index); an excess takes units the same way from the entries of smallest
    remainder among those above 1, one per entry per round."""
    scaled = [p * 2.0**53 for p in column]
    weights = [max(math.floor(x), 1) for x in scaled]
    remainder = [x - w for x, w in zip(scaled, weights, strict=True)]
    short = 2**53 - sum(weights)
    while short > 0:
        n = len(weights)
        order = sorted(range(n), key=lambda i: (-remainder[i], i))
        for i in order[: min(short, n)]:
            weights[i] += 1
            remainder[i] -= 1.0
        short = 2**53 - sum(weights)
    while short < 0:
        live = [i for i in range(len(weights)) if weights[i] > 1]
        order = sorted(live, key=lambda i: (remainder[i], i))
        for i in order[: min(-short, len(live))]:
            weights[i] -= 1
            remainder[i] += 1.0
        short = 2**53 - sum(weights)
    return weights


def test_a_shortfall_larger_than_the_column_is_placed_as_documented() -> None:
    """exponential/equality, d = 6, ε = 2: the floors are 7 units short over 6 entries."""
    matrix = utility_matrix("equality", 6)
    channel = ideal_channel(matrix, exponential_scale(matrix, 2.0, "tight"))
    floors = np.maximum(np.floor(channel * float(TOTAL)), 1.0).astype(np.int64)
    assert int(TOTAL - floors[:, 0].sum()) == 7  # the case a client could not reproduce
    weights = quantise(channel)
    for x in range(6):
        assert weights[:, x].tolist() == doc_quantise_column(channel[:, x].tolist())
    # every entry got one unit, and the largest remainder (lowest index among ties) two
    assert (weights[:, 0] - floors[:, 0]).tolist() == [1, 2, 1, 1, 1, 1]


def test_random_columns_with_shortfalls_and_excesses_follow_the_rule() -> None:
    rng = np.random.default_rng(20261126)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        column = rng.dirichlet(np.full(n, 0.3))
        column[rng.random(n) < 0.2] = 1e-18  # entries floored up to one unit
        column /= column.sum()
        column = column * (1.0 + float(rng.integers(-40, 41)) * 2.0**-52)  # off by ulps
        ours = quantise(column[:, None])[:, 0].tolist()
        assert ours == doc_quantise_column(column.tolist())


# -- 3. the discrete Gaussian's δ from the published fields --------------------------------


def decimal_gaussian_delta(epsilon: float, s: float, levels: int, margin: int) -> Decimal:
    """The docs' channel for ``s``, ``K``, ``M``, built in 50-digit decimals: the discrete
    Gaussian normalised over every integer that matters, tails into the end cells, each
    column normalised once, quantised by the remainder rule, and its exact hockey-stick δ."""
    two_s2 = 2 * Decimal(s) ** 2
    reach = levels + margin + math.ceil(40 * s) + 1
    weight = {z: (-(Decimal(z) ** 2) / two_s2).exp() for z in range(-reach, reach + 1)}
    cells = levels + 2 * margin + 1
    columns = []
    for k in range(levels + 1):
        col = []
        for g in range(cells):
            y = g - margin
            if g == 0:
                col.append(sum(weight[z] for z in range(-reach, -margin - k + 1)))
            elif g == cells - 1:
                col.append(sum(weight[z] for z in range(levels + margin - k, reach + 1)))
            else:
                col.append(weight[y - k])
        total = sum(col)
        columns.append(doc_quantise_column([float(p / total) for p in col]))
    ratio = Decimal(epsilon).exp()
    scale = Decimal(2) ** 53
    return max(
        sum(
            (max(Decimal(0), a - ratio * b) for a, b in zip(columns[k], columns[j], strict=True)),
            Decimal(0),
        )
        / scale
        for k in range(levels + 1)
        for j in range(levels + 1)
        if k != j
    )


def documented_tolerance(epsilon: float, cells: int) -> float:
    """docs/wire-format.md: each weight within 2 units, so each of the G terms within
    ``2(1 + e^ε)`` units of ``2^-53``."""
    return 2.0 * cells * (1.0 + math.exp(epsilon)) / 2.0**53


@pytest.mark.parametrize("delta", [1e-5, 1e-7])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 8.0])
def test_gaussian_delta_is_reproduced_within_the_documented_tolerance(
    epsilon: float, delta: float
) -> None:
    gaussian = GaussianRandomizer(epsilon=epsilon, lo=0.0, hi=1.0, target_delta=delta)
    lattice = gaussian.lattice
    cells = lattice.channel.cells
    theirs = decimal_gaussian_delta(
        epsilon, lattice.sigma_levels, lattice.channel.levels, lattice.margin
    )
    gap = abs(float(theirs) - gaussian.delta)
    assert gap <= documented_tolerance(epsilon, cells)
    assert gaussian.delta <= delta  # what the server promises
    assert float(theirs) <= delta + documented_tolerance(epsilon, cells)


def test_the_tolerance_is_not_vacuous() -> None:
    """Power: the decimal rebuild at a σ one calibration step (1/4096) away differs from
    the published δ by far more than the tolerance, so the check above can fail."""
    gaussian = GaussianRandomizer(epsilon=2.0, lo=0.0, hi=1.0, target_delta=1e-5)
    lattice = gaussian.lattice
    moved = decimal_gaussian_delta(
        2.0, lattice.sigma_levels * (1.0 - 1.0 / 4096.0), lattice.channel.levels, lattice.margin
    )
    assert abs(float(moved) - gaussian.delta) > 100 * documented_tolerance(
        2.0, lattice.channel.cells
    )
