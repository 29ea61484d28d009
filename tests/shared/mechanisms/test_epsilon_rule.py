"""The one rule on ε (``ldp_shared.mechanisms._checks``): every mechanism, of a collection
or of a training job, refuses an ε outside what it takes with a ConfigurationError that
names the ε asked for and the limit, at once, and never with an arithmetic error."""

from __future__ import annotations

import math
import re
import time
from typing import Any

import pytest

from ldp_shared.accountant import account
from ldp_shared.errors import ConfigurationError
from ldp_shared.learning.device import loss_randomizer
from ldp_shared.mechanisms import HybridRandomizer, LaplaceRandomizer, PiecewiseRandomizer
from ldp_shared.mechanisms._checks import MAX_EPSILON, check_epsilon
from ldp_shared.mechanisms.base import mechanism_names
from ldp_shared.mechanisms.gradient_laplace import EPSILON_RANGE
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.mechanisms.piecewise import LARGEST_EPSILON
from ldp_shared.schema import CollectionSpec

ATTRIBUTES: dict[str, dict[str, Any]] = {
    "oue": {"domain": ["a", "b"]},
    "sue": {"domain": ["a", "b"]},
    "grr": {"domain": ["a", "b"]},
    "exponential": {"domain": ["a", "b"], "utility": [[1.0, 0.0], [0.0, 1.0]]},
    "hadamard": {"domain": ["a", "b"]},
    "histogram": {"edges": [0, 1, 2]},
    "duchi": {"lo": 0, "hi": 1},
    "piecewise": {"lo": 0, "hi": 1},
    "hybrid": {"lo": 0, "hi": 1},
    "laplace": {"lo": 0, "hi": 1},
    "gaussian": {"lo": 0, "hi": 1, "delta": 1e-5},
    "flh": {},
    "hcms": {},
    "pem": {},
}
"""An attribute of each built-in mechanism that takes a share of ε (MASK's ε is its
keep probability's)."""


def collection(mechanism: str, epsilon: float) -> CollectionSpec:
    attribute = {"name": "x", "mechanism": mechanism, **ATTRIBUTES.get(mechanism, {})}
    return CollectionSpec.model_validate(
        {"name": "c", "epsilon": epsilon, "attributes": [attribute]}
    )


def test_the_rule_names_the_epsilon_and_the_limit() -> None:
    assert pytest.approx(709.78, abs=0.01) == MAX_EPSILON
    assert check_epsilon(MAX_EPSILON) == MAX_EPSILON
    assert check_epsilon(math.inf) == math.inf  # no privacy: for exact tests only
    with pytest.raises(ConfigurationError, match=r"ε = 1e\+308 is too large: no mechanism"):
        check_epsilon(1e308)
    with pytest.raises(
        ConfigurationError, match=r"ε = 80 is too large: piecewise takes ε up to 76\.24"
    ):
        check_epsilon(80.0, LARGEST_EPSILON, "piecewise")
    with pytest.raises(ConfigurationError, match=r"ε = 0\.001 is too small: x takes ε from 0\.01"):
        check_epsilon(0.001, 16.0, "x", 0.01)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ConfigurationError, match="must be > 0"):
            check_epsilon(bad)


@pytest.mark.parametrize("mechanism", [m for m in mechanism_names() if m in ATTRIBUTES])
@pytest.mark.parametrize("epsilon", [5_000.0, 1e308])
def test_every_collection_mechanism_refuses_a_huge_epsilon_at_once(
    mechanism: str, epsilon: float
) -> None:
    started = time.perf_counter()
    refusal = re.escape(f"attribute 'x': ε = {epsilon:g} is too large")
    with pytest.raises(ConfigurationError, match=refusal):
        account(collection(mechanism, epsilon))
    assert time.perf_counter() - started < 1.0  # gaussian calibrated 7.6 s at 1e308


@pytest.mark.parametrize("mechanism", ["laplace", "piecewise", "hybrid", "gaussian"])
@pytest.mark.parametrize("epsilon", [1e-300, 1e-20])
def test_a_tiny_epsilon_is_refused_as_a_configuration(mechanism: str, epsilon: float) -> None:
    with pytest.raises(ConfigurationError) as refused:  # laplace said "math domain error";
        account(collection(mechanism, epsilon))  # piecewise looped for ever at 1e-20
    assert f"ε = {epsilon:g}" in refused.value.detail or f"ε = {epsilon!r}" in refused.value.detail


@pytest.mark.parametrize("kind", [PiecewiseRandomizer, HybridRandomizer])
def test_the_lattice_pm_takes_up_to_its_largest_epsilon(kind: type[Any]) -> None:
    assert kind(epsilon=LARGEST_EPSILON, lo=0.0, hi=1.0).exact_epsilon > 0
    with pytest.raises(ConfigurationError, match=r"ε = 76\.25 is too large: .* up to 76\.24"):
        kind(epsilon=76.25, lo=0.0, hi=1.0)
    assert math.isfinite(LaplaceRandomizer(epsilon=16.0, lo=0.0, hi=1.0).exact_epsilon)


def test_l1_laplace_takes_its_stated_range() -> None:
    least, most = EPSILON_RANGE
    for epsilon in (least, most):
        assert gradient_randomizer("l1-laplace", 6, epsilon).exact_epsilon > 0
    for epsilon in (least / 2, most * 1.01, 1e308):
        with pytest.raises(ConfigurationError, match=r"l1-laplace takes ε from 0\.0019 to 16\.75"):
            gradient_randomizer("l1-laplace", 6, epsilon)


@pytest.mark.parametrize("name", ["sampled-piecewise", "sampled-hybrid"])
@pytest.mark.parametrize("epsilon", [700.0, 5_000.0, 1e308])
def test_a_sampled_gradient_states_its_limit_in_the_jobs_epsilon(name: str, epsilon: float) -> None:
    with pytest.raises(ConfigurationError) as refused:
        gradient_randomizer(name, 6, epsilon)
    detail = refused.value.detail
    assert f"ε = {epsilon:g} is too large: {name} on 6 coordinates takes ε up to 457.44" in detail
    assert "116.6" not in detail and "residual" not in detail  # not ε/k, not the decoder
    assert gradient_randomizer(name, 6, 6 * LARGEST_EPSILON).k == 6


def test_the_gaussian_gradient_refuses_an_epsilon_its_rounding_cannot_keep() -> None:
    with pytest.raises(ConfigurationError, match=r"ε = 700 is too large: l2-gaussian at δ = 1e-06"):
        gradient_randomizer("l2-gaussian", 6, 700.0, delta=1e-6)
    with pytest.raises(ConfigurationError, match=r"ε = 1e\+308 is too large"):
        gradient_randomizer("l2-gaussian", 6, 1e308, delta=1e-6)


def test_the_loss_mechanism_skips_a_channel_that_cannot_be_built() -> None:
    # hybrid has no channel at ε = 17 (53-bit weights): piecewise answers the losses
    assert isinstance(loss_randomizer(17.0), PiecewiseRandomizer)
    with pytest.raises(ConfigurationError, match=r"ε = 100 is too large: the loss mechanism"):
        loss_randomizer(100.0)
