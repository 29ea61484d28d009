"""The privacy accountant: ε per attribute, per report (= per record) and for the label."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from ldp_shared.accountant import Privacy, account, allotted_epsilons
from ldp_shared.collection import build_config
from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import unary_epsilon
from ldp_shared.mechanisms import UnaryEncoding
from ldp_shared.mechanisms.base import register, unregister
from ldp_shared.mechanisms.unary import UnaryEncodingSpec
from ldp_shared.schema import CollectionSpec


def spec(**changes: Any) -> CollectionSpec:
    base: dict[str, Any] = {
        "name": "acc",
        "epsilon": 3.0,
        "attributes": [
            {"name": "a", "domain": ["x", "y", "z"], "weight": 2.0},
            {"name": "b", "domain": ["x", "y"], "mechanism": "grr"},
            {"name": "c", "domain": ["x", "y"], "mechanism": "sue"},
            {"name": "m", "domain": ["i", "j", "k"], "mechanism": "mask", "keep_probability": 0.8},
        ],
    }
    base.update(changes)
    return CollectionSpec.model_validate(base)


def test_split_shares_the_budget_by_weight_and_sums_the_exact_epsilons() -> None:
    s = spec()
    *shares, mask = allotted_epsilons(s)
    assert shares == pytest.approx([1.5, 0.75, 0.75]) and mask is None
    acc = account(s)
    a, b, c, m = (entry.privacy.epsilon for entry in acc.attributes)
    assert (a, b, c) == pytest.approx((1.5, 0.75, 0.75), rel=1e-12)
    assert m == pytest.approx(3 * math.log(0.8 / 0.2), rel=1e-12)  # MASK: m·ln(p/(1-p))
    assert acc.report == acc.record == Privacy(a + b + c + m, 0.0)
    assert build_config(s).epsilon == acc.report.epsilon


def test_sample_pays_the_largest_sampled_epsilon_plus_the_baskets() -> None:
    acc = account(
        spec(
            budget="sample",
            attributes=[
                {"name": "a", "domain": ["x", "y", "z"]},
                {"name": "b", "domain": ["x", "y"], "mechanism": "grr"},
                {"name": "m", "domain": ["i", "j"], "mechanism": "mask", "keep_probability": 0.9},
            ],
        )
    )
    a, b, m = (entry.privacy.epsilon for entry in acc.attributes)
    assert [e.sampled for e in acc.attributes] == [True, True, False]
    assert acc.report.epsilon == max(a, b) + m
    assert a == pytest.approx(3.0, rel=1e-12) and b == pytest.approx(3.0, rel=1e-12)


@pytest.mark.parametrize("budget", ["split", "sample"])
def test_the_label_spends_what_its_features_spend(budget: str) -> None:
    s = spec(
        budget=budget,
        label="c",
        attributes=[
            {"name": "a", "domain": ["x", "y", "z"]},
            {"name": "b", "domain": ["x", "y"], "mechanism": "sue"},
            {"name": "c", "domain": ["p", "q"]},
        ],
    )
    acc = account(s)
    features = [entry.privacy.epsilon for entry in acc.attributes]
    assert [entry.classes for entry in acc.attributes] == [2, 2]
    expected = sum(features) if budget == "split" else max(features)
    assert acc.label == Privacy(expected, 0.0)
    assert acc.attribute("c") == acc.label
    assert acc.report.epsilon == expected
    assert allotted_epsilons(s)[2] is None  # the label takes no share


def test_exact_epsilon_is_computed_back_from_the_probabilities() -> None:
    acc = account(spec(epsilon=1.0, attributes=[{"name": "a", "domain": ["x", "y"]}]))
    randomizer = acc.attributes[0].randomizer
    assert isinstance(randomizer, UnaryEncoding)
    assert acc.report.epsilon == unary_epsilon(randomizer.p, randomizer.q)


@pytest.mark.parametrize(
    ("mechanism", "epsilon", "accepted"),
    [
        ("oue", 700.0, True),
        ("oue", 800.0, False),  # q = 1/(e^ε+1) rounds to 0: ε would be infinite
        ("grr", 1e-12, True),
        ("grr", 1e-300, False),  # p = q in floating point: ε would be 0
        ("sue", 1e-300, False),
    ],
)
def test_epsilon_at_the_float_boundaries(mechanism: str, epsilon: float, accepted: bool) -> None:
    s = spec(
        epsilon=epsilon, attributes=[{"name": "a", "domain": ["x", "y"], "mechanism": mechanism}]
    )
    if accepted:
        assert 0.0 < account(s).report.epsilon < math.inf
    else:
        reason = (
            r"= 800 is too large: no mechanism takes ε above 709\.783"
            if epsilon > 1
            else "rounds to 0"
        )
        with pytest.raises(ConfigurationError, match=f"attribute 'a': ε {reason}"):
            account(s)


# ------------------------------------------------------------- (ε, δ) through the registry


@dataclass(frozen=True)
class _DeltaUnary(UnaryEncoding):
    """OUE that claims a δ (only to see δ compose; not a real (ε, δ) mechanism)."""

    @property
    def delta(self) -> float:
        return 1e-6


class _DeltaSpec(UnaryEncodingSpec):
    mechanism: Literal["test-delta"]  # type: ignore[assignment]

    def randomizer(self, epsilon: float | None, classes: int = 1) -> _DeltaUnary:
        assert epsilon is not None
        return _DeltaUnary(d=len(self.domain) * classes, epsilon=epsilon)


@pytest.fixture
def delta_mechanism() -> Iterator[None]:
    register(_DeltaSpec)
    yield
    unregister("test-delta")


@pytest.mark.parametrize(("budget", "delta"), [("split", 2e-6), ("sample", 1e-6)])
def test_delta_composes_like_epsilon(delta_mechanism: None, budget: str, delta: float) -> None:
    s = spec(
        budget=budget,
        attributes=[
            {"name": "a", "domain": ["x", "y"], "mechanism": "test-delta"},
            {"name": "b", "domain": ["x", "y"], "mechanism": "test-delta"},
            {"name": "c", "domain": ["x", "y"]},
        ],
    )
    acc = account(s)
    assert acc.report.delta == pytest.approx(delta, rel=1e-12)
    config = build_config(s)
    assert config.delta == acc.report.delta
    assert [a.delta for a in config.attributes] == [1e-6, 1e-6, 0.0]
    assert "delta" not in config.model_dump()["attributes"][2]  # δ = 0 is not published


def test_a_config_keeps_the_account_of_its_spec_object_only() -> None:
    import gc

    from ldp_shared import collection

    config = build_config(spec())
    assert config.privacy is config.privacy  # computed once
    other = config.model_copy(update={"spec": spec(epsilon=1.0)})
    assert other.privacy.report.epsilon < config.privacy.report.epsilon  # not the cached one
    kept = len(collection._ACCOUNTS)
    del config, other
    gc.collect()
    assert len(collection._ACCOUNTS) <= kept - 2  # entries go with their specs
