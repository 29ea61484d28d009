"""The lattice numeric mechanisms (piecewise, hybrid, laplace): exact tests of the integer
channel, its ε, the decoders, the input-independent output lattice, segment and specs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import build_config, verify_config
from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import channel_epsilon
from ldp_shared.mechanisms import (
    DuchiRandomizer,
    HybridRandomizer,
    LaplaceRandomizer,
    PiecewiseRandomizer,
)
from ldp_shared.mechanisms.base import EPSILON_SLACK
from ldp_shared.mechanisms.hybrid import pm_probability
from ldp_shared.mechanisms.integer_channel import TOTAL
from ldp_shared.mechanisms.laplace import build_laplace, laplace_channel
from ldp_shared.mechanisms.lattice import (
    DECODE_TOLERANCE,
    LatticeRandomizer,
    lattice_channel,
    level_values,
    round_to_levels,
)
from ldp_shared.mechanisms.piecewise import piecewise_channel, piecewise_variance
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

MECHANISMS: dict[str, type[LatticeRandomizer]] = {
    "piecewise": PiecewiseRandomizer,
    "hybrid": HybridRandomizer,
    "laplace": LaplaceRandomizer,
}
EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0]
CASES = [(name, eps) for name in MECHANISMS for eps in EPSILONS]


def make(name: str, epsilon: float, lo: float = 0.0, hi: float = 1.0) -> LatticeRandomizer:
    return MECHANISMS[name](epsilon=epsilon, lo=lo, hi=hi)


def spec(name: str, epsilon: float = 2.0, **attribute: Any) -> CollectionSpec:
    numeric = {"name": "age", "mechanism": name, "lo": 17.0, "hi": 90.0, **attribute}
    return CollectionSpec.model_validate({"name": "n", "epsilon": epsilon, "attributes": [numeric]})


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_integer_channel_columns_and_exact_epsilon(name: str, epsilon: float) -> None:
    channel = make(name, epsilon).channel
    weights = channel.integer.weights
    assert weights.dtype == np.int64 and weights.min() >= 1
    assert np.all(weights.sum(axis=0) == TOTAL)
    assert np.all(channel.integer.cumulative[-1] == TOTAL)
    m = weights / float(TOTAL)
    assert make(name, epsilon).exact_epsilon == channel_epsilon(m)
    # within the slack of the allotted ε, from both sides
    assert epsilon * (1 - 1e-9) <= channel.epsilon <= epsilon * (1 + EPSILON_SLACK)
    # attained at the boundary: between the extreme levels t = −1 and t = 1
    assert channel_epsilon(m[:, [0, channel.levels]]) == pytest.approx(channel.epsilon, rel=1e-9)


@pytest.mark.parametrize(("name", "epsilon"), CASES)
def test_the_decoders_reproduce_the_levels_and_their_squares(name: str, epsilon: float) -> None:
    channel = make(name, epsilon).channel
    m, t = channel.matrix, level_values(channel.levels)
    assert np.max(np.abs(m.T @ channel.mean_decoder - t)) <= DECODE_TOLERANCE
    if (name == "hybrid" and epsilon <= 0.61) or channel.levels == 1:
        return  # Duchi's two cells, or two levels: no separate second moment
    assert channel.square_decoder is not None
    assert np.max(np.abs(m.T @ channel.square_decoder - t * t)) <= DECODE_TOLERANCE


def test_duchi_s_two_cells_carry_no_second_moment() -> None:
    channel = make("hybrid", 0.5).channel
    assert channel.cells == 2 and channel.square_decoder is None
    released = make("hybrid", 0.5).estimate_stats({"counts": np.array([400, 600])}, 1000, 0.95)
    assert released.value_variance is None


def test_the_ideal_channels_are_the_papers() -> None:
    # PM: each column integrates the density, so it sums to one; ratio e^ε between levels
    ideal = piecewise_channel(2.0, 128, 256)
    assert np.allclose(ideal.sum(axis=0), 1.0, atol=1e-13)
    assert channel_epsilon(ideal) == pytest.approx(2.0, rel=1e-12)
    # discrete Laplace: P(y|k) ∝ exp(−ε|y−k|/K), the clamped tails in the end cells
    lap = laplace_channel(1.0, 4, 10)
    assert np.allclose(lap.sum(axis=0), 1.0, atol=1e-13)
    assert lap[12, 2] / lap[13, 2] == pytest.approx(math.exp(0.25), rel=1e-12)
    assert channel_epsilon(lap) == pytest.approx(1.0, rel=1e-12)
    # HM: α = 1 − e^{−ε/2} above 0.61, else Duchi alone
    assert pm_probability(0.6) == 0.0 and pm_probability(2.0) == pytest.approx(1 - math.exp(-1))
    assert make("hybrid", 2.0).channel.cells == 256


def test_pm_beats_duchi_in_the_worst_case_above_about_1_29() -> None:
    """Wang et al. (ICDE 2019), §III-B: Var_PM's worst case (t = 1) is below Duchi's
    (t = 0: C_d²) exactly when ε exceeds about 1.29."""

    def gap(eps: float) -> float:
        pm = float(piecewise_variance(np.array([1.0]), eps)[0])
        return pm - DuchiRandomizer(epsilon=eps, lo=0.0, hi=1.0).c ** 2

    lo, hi = 0.5, 3.0
    assert gap(lo) > 0 > gap(hi)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    assert lo == pytest.approx(1.29, abs=0.005)
    # the formula is the variance of the continuous mechanism at t = ±1 and t = 0
    e = math.exp(1.0)
    assert piecewise_variance(np.array([0.0]), 2.0)[0] == pytest.approx(
        (e + 3) / (3 * (e - 1) ** 2)
    )


def test_rounding_is_unbiased_and_between_neighbours() -> None:
    t = np.array([-1.0, -0.3, 0.0, 0.123456789, 1.0])
    levels = np.stack([round_to_levels(t, 8, seeded_rng(s)) for s in range(2000)])
    assert np.all(np.abs(level_values(8)[levels] - t) <= 2 / 8 + 1e-12)
    assert level_values(8)[levels].mean(axis=0) == pytest.approx(t, abs=0.01)
    assert levels[:, 0].tolist() == [0] * 2000 and levels[:, -1].tolist() == [8] * 2000


@pytest.mark.parametrize("name", MECHANISMS)
def test_the_output_lattice_does_not_depend_on_the_input(name: str) -> None:
    config = build_config(spec(name))
    cells = config.attributes[0].model_dump()["cells"]
    width = config.attributes[0].byte_length
    x = 53.123456789
    inputs = [17.0, 17.000000000000004, x, np.nextafter(x, 100.0), 90.0, -1e9, 1e9, 42.0]
    seen: list[set[int]] = []
    for value in inputs:
        packed = Privatizer(config).privatize_columns(
            {"age": np.full(20_000, value)}, seeded_rng(3)
        )
        batch = decode_reports(config, packed)
        assert batch.valid.all()
        index = packed[:, 0].astype(np.int64)
        if width == 2:
            index = index << 8 | packed[:, 1]
        seen.append(set(index.tolist()))
        assert max(seen[-1]) < cells
    # every cell is possible under every value (all weights >= 1): one lattice for all
    channel = build_config(spec(name)).randomizers[0]
    assert isinstance(channel, LatticeRandomizer) and channel.channel.integer.weights.min() >= 1
    # values differing in their last bit give the very same answers from the same stream
    a = Privatizer(config).privatize_columns({"age": np.full(5000, x)}, seeded_rng(9))
    b = Privatizer(config).privatize_columns(
        {"age": np.full(5000, np.nextafter(x, 100.0))}, seeded_rng(9)
    )
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", MECHANISMS)
def test_segment_published_fields_and_a_bad_index(name: str) -> None:
    config = verify_config(build_config(spec(name)))
    attr = config.attributes[0]
    fields = attr.model_dump()
    assert attr.encoding == "index" and (fields["lo"], fields["hi"]) == (17.0, 90.0)
    cells, levels = fields["cells"], fields["levels"]
    assert attr.byte_length == (1 if cells <= 256 else 2)
    m = config.randomizers[0]
    assert isinstance(m, LatticeRandomizer) and (m.channel.cells, m.channel.levels) == (
        cells,
        levels,
    )
    answers = np.array([0, 1, cells - 1], dtype=np.int64)
    assert m.unpack(m.pack(answers)).values.tolist() == answers.tolist()
    if attr.byte_length == 1 and cells == 256:
        return  # every byte is a cell
    bad = np.array([[cells >> 8, cells & 0xFF]] if attr.byte_length == 2 else [[cells]])
    batch = decode_reports(config, bad.astype(np.uint8))
    assert not batch.valid[0]
    assert batch.reasons[0] == "attribute 'age': value index outside the domain"


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"lo": 5.0, "hi": 5.0}, "lo must be below hi"),
        ({"lo": 9.0, "hi": 5.0}, "lo must be below hi"),
        ({"lo": -math.inf}, "finite"),
        ({"hi": math.nan}, "finite"),
        ({"domain": ["a", "b"]}, "domain"),
    ],
)
def test_bad_specs_are_refused_in_one_line(name: str, change: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match) as error:
        spec(name, **change)
    assert len(error.value.errors()) == 1
    assert "\n" not in error.value.errors()[0]["msg"]


@pytest.mark.parametrize("name", MECHANISMS)
def test_bad_values_on_the_device(name: str) -> None:
    config = build_config(spec(name))
    for bad in (math.nan, math.inf, "53"):
        with pytest.raises(InvalidRecordError) as error:
            Privatizer(config).privatize_columns({"age": [40.0, bad]}, seeded_rng(1))
        assert "\n" not in str(error.value)
    with pytest.raises(InvalidRecordError, match=r"t in \[-1, 1\]"):
        make(name, 1.0).perturb(np.array([1.5]), seeded_rng(1))


def test_an_epsilon_the_weights_cannot_carry_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigurationError) as error:
        build_laplace(40.0)
    assert "\n" not in str(error.value) and "laplace" in str(error.value).lower()
    with pytest.raises(ConfigurationError, match="Laplace lattice takes ε"):
        build_config(spec("laplace", epsilon=40.0))
    tight = np.array([[0.5, 0.5 * math.exp(-30.0)], [0.5, 1.0 - 0.5 * math.exp(-30.0)]])
    with pytest.raises(ConfigurationError, match="53-bit weights") as error:
        lattice_channel(tight, 30.0)
    assert "\n" not in str(error.value)
    # PM at a large ε: the high band is narrower than a cell, so it spends less (exactly)
    wide = make("piecewise", 40.0)
    assert wide.exact_epsilon == channel_epsilon(wide.channel.matrix) < 26.0
    with pytest.raises(ConfigurationError, match="finite"):
        make("piecewise", math.inf)


def test_laplace_chooses_its_grid_per_epsilon() -> None:
    grids = {
        eps: (make("laplace", eps).channel.levels, make("laplace", eps).channel.cells)
        for eps in EPSILONS
    }
    assert grids == {0.5: (1, 46), 1.0: (1, 26), 2.0: (2, 25), 4.0: (4, 25), 8.0: (16, 43)}
    assert make("laplace", 8.0).published()["margin"] == (43 - 1 - 16) // 2


def test_the_released_estimate_uses_the_stated_formulas() -> None:
    m = make("piecewise", 2.0, lo=17.0, hi=90.0)
    ch = m.channel
    counts = np.bincount(ch.integer.sample(np.full(10_000, 80), seeded_rng(4)), minlength=256)
    released = m.estimate_stats({"counts": counts}, 10_000, 0.95)
    pi = counts / 10_000
    t_hat = float(pi @ ch.mean_decoder)
    q_hat = float(pi @ ch.mean_decoder**2)
    assert ch.square_decoder is not None
    m_hat = float(pi @ ch.square_decoder)
    m2 = min(max(m_hat - 1 / 128**2, t_hat**2), 1.0)
    assert released.estimate[0] == pytest.approx(17 + (t_hat + 1) * 36.5, rel=1e-12)
    assert released.stderr[0] == pytest.approx(math.sqrt((q_hat - m2) / 10_000) * 36.5)
    spread = m_hat - t_hat**2 + (q_hat - m_hat) / 10_000
    assert released.value_variance is not None
    assert released.value_variance[0] == pytest.approx(max(spread, 0.0) * 36.5**2, abs=1e-9)
