"""MASK's reconstruction privacy (Rizvi and Haritsa 2002, §3) against its derivation.

A true bit X ~ Bernoulli(s0) is distorted to Y (kept with probability p); a miner who
knows p and s0 reconstructs X as 1 with the posterior probability P(X=1 | Y). The
probability that a true 1 is reconstructed is
``R1 = Σ_y P(Y=y | X=1) · P(X=1 | Y=y)``, with Bayes' rule for the posterior; ``R0`` the
same for a 0. Checked here by direct computation and at the boundaries, independently
of the closed form in ``Mask.reconstruction_privacy`` and ``mask_privacy``.
"""

from __future__ import annotations

import math

import pytest

from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.mechanisms import Mask
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.itemsets import mask_privacy


def _derived(p: float, s0: float) -> tuple[float, float]:
    prior = {1: s0, 0: 1.0 - s0}

    def likelihood(y: int, x: int) -> float:
        return p if y == x else 1.0 - p

    def posterior(x: int, y: int) -> float:
        evidence = sum(likelihood(y, v) * prior[v] for v in (0, 1))
        return likelihood(y, x) * prior[x] / evidence

    r1 = sum(likelihood(y, 1) * posterior(1, y) for y in (0, 1))
    r0 = sum(likelihood(y, 0) * posterior(0, y) for y in (0, 1))
    return r1, r0


@pytest.mark.parametrize("p", [0.55, 0.7, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("s0", [0.001, 0.01, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("a", [0.0, 0.5, 1.0])
def test_reconstruction_probabilities_match_the_derivation(p: float, s0: float, a: float) -> None:
    got = Mask(d=10, keep_probability=p).reconstruction_privacy(s0, a)
    r1, r0 = _derived(p, s0)
    assert got["R1"] == pytest.approx(r1, rel=1e-12)
    assert got["R0"] == pytest.approx(r0, rel=1e-12)
    assert got["R"] == pytest.approx(a * r1 + (1 - a) * r0, rel=1e-12)
    assert got["privacy"] == pytest.approx((1 - (a * r1 + (1 - a) * r0)) * 100, rel=1e-12)


def test_boundaries() -> None:
    # p -> 1/2: Y says nothing, the posterior is the prior: R1 = s0, R0 = 1 - s0
    r1, r0 = _derived(0.5, 0.2)
    got = Mask(d=2, keep_probability=0.5 + 1e-12).reconstruction_privacy(0.2, 1.0)
    assert (got["R1"], got["R0"]) == (pytest.approx(r1), pytest.approx(r0))
    assert got["R1"] == pytest.approx(0.2)
    # p -> 1: everything is reconstructed, no privacy left
    near_one = Mask(d=2, keep_probability=1 - 1e-12).reconstruction_privacy(0.01, 0.5)
    assert near_one["privacy"] == pytest.approx(0.0, abs=1e-6)
    # privacy falls as p grows (a = 1, s0 = 0.01: the paper's setting for purchases)
    values = [
        Mask(d=2, keep_probability=p).reconstruction_privacy(0.01, 1.0)["privacy"]
        for p in (0.6, 0.7, 0.8, 0.9, 0.95)
    ]
    assert values == sorted(values, reverse=True)
    with pytest.raises(ConfigurationError):
        Mask(d=2, keep_probability=0.9).reconstruction_privacy(0.0, 1.0)
    with pytest.raises(ConfigurationError):
        Mask(d=2, keep_probability=0.9).reconstruction_privacy(0.1, 1.5)


def test_the_wire_form_states_epsilon_and_the_measure() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "shop",
            "attributes": [
                {
                    "name": "basket",
                    "domain": [f"i{j}" for j in range(100)],
                    "mechanism": "mask",
                    "keep_probability": 0.9,
                },
                {"name": "color", "domain": ["r", "g"], "mechanism": "oue"},
            ],
            "epsilon": 1.0,
        }
    )
    config = build_config(spec)
    privacy = mask_privacy(config.attribute("basket"), 0.01, 1.0)
    assert privacy.item_epsilon == pytest.approx(math.log(9))
    assert privacy.basket_epsilon == pytest.approx(100 * math.log(9))  # ≈ 220
    assert privacy.basket_epsilon == pytest.approx(config.attribute("basket").epsilon)
    r1, _ = _derived(0.9, 0.01)
    assert privacy.privacy == pytest.approx((1 - r1) * 100)
    reconstruction = privacy.R
    assert reconstruction == pytest.approx(r1)
    with pytest.raises(InvalidQueryError, match="not a MASK"):
        mask_privacy(config.attribute("color"), 0.01, 1.0)
    with pytest.raises(InvalidQueryError):
        mask_privacy(config.attribute("basket"), 1.0, 1.0)
    with pytest.raises(InvalidQueryError):
        mask_privacy(config.attribute("basket"), 0.1, -0.1)
