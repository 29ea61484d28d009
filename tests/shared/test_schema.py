"""The collection spec: every bad spec is a pydantic ValidationError, good ones pass."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from ldp_shared.schema import MAX_DOMAIN_SIZE, AttributeSpec, CollectionSpec


def attr(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "colour", "domain": ["red", "green", "blue"]}
    base.update(overrides)
    return base


def mask_attr(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "basket", "mechanism": "mask", "keep_probability": 0.9}
    base.update(overrides)
    return attr(**base)


def spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "survey", "epsilon": 1.0, "attributes": [attr()]}
    base.update(overrides)
    return base


def test_a_minimal_spec_and_its_defaults() -> None:
    s = CollectionSpec.model_validate(spec())
    a = s.attributes[0]
    assert (a.mechanism, a.weight, a.keep_probability, a.is_basket) == ("oue", 1.0, None, False)
    assert s.budget == "split" and s.release.min_reports == 100 and s.description == ""


def test_a_full_spec() -> None:
    s = CollectionSpec.model_validate(
        spec(
            name="car-demo_2",
            description="everything",
            attributes=[
                attr(name="a", mechanism="sue", weight=2.0),
                attr(name="B_2", mechanism="grr"),
                attr(name="_c", mechanism="oue", weight=0.5),
                mask_attr(domain=["x", "y"]),
            ],
            release={"min_reports": 1},
        )
    )
    assert [a.is_basket for a in s.attributes] == [False, False, False, True]


def test_mask_only_collection_has_no_epsilon() -> None:
    s = CollectionSpec.model_validate(spec(epsilon=None, attributes=[mask_attr()]))
    assert s.epsilon is None


def test_mask_keep_probability_bounds_are_open() -> None:
    for kp in (0.5000001, 0.9999999):
        AttributeSpec.model_validate(mask_attr(keep_probability=kp))


BAD_SPECS: dict[str, dict[str, Any]] = {
    # ε
    "epsilon-zero": spec(epsilon=0.0),
    "epsilon-negative": spec(epsilon=-1.0),
    "epsilon-inf": spec(epsilon=math.inf),
    "epsilon-minus-inf": spec(epsilon=-math.inf),
    "epsilon-nan": spec(epsilon=math.nan),
    "epsilon-string": spec(epsilon="lots"),
    "epsilon-missing": spec(epsilon=None),
    "epsilon-absent": {"name": "survey", "attributes": [attr()]},
    "epsilon-with-only-mask": spec(attributes=[mask_attr()]),
    # MASK keep probability
    "mask-p-missing": spec(epsilon=None, attributes=[attr(mechanism="mask")]),
    "mask-p-half": spec(epsilon=None, attributes=[mask_attr(keep_probability=0.5)]),
    "mask-p-one": spec(epsilon=None, attributes=[mask_attr(keep_probability=1.0)]),
    "mask-p-low": spec(epsilon=None, attributes=[mask_attr(keep_probability=0.2)]),
    "mask-p-high": spec(epsilon=None, attributes=[mask_attr(keep_probability=1.5)]),
    "mask-p-nan": spec(epsilon=None, attributes=[mask_attr(keep_probability=math.nan)]),
    "p-for-oue": spec(attributes=[attr(keep_probability=0.9)]),
    "p-for-sue": spec(attributes=[attr(mechanism="sue", keep_probability=0.9)]),
    "p-for-grr": spec(attributes=[attr(mechanism="grr", keep_probability=0.9)]),
    # domains
    "domain-one-value": spec(attributes=[attr(domain=["only"])]),
    "domain-empty": spec(attributes=[attr(domain=[])]),
    "domain-duplicate": spec(attributes=[attr(domain=["a", "b", "a"])]),
    "domain-empty-value": spec(attributes=[attr(domain=["a", ""])]),
    "domain-long-value": spec(attributes=[attr(domain=["a", "x" * 201])]),
    "domain-not-strings": spec(attributes=[attr(domain=[1, 2])]),
    "domain-a-string": spec(attributes=[attr(domain="abc")]),
    "domain-too-large": spec(
        attributes=[attr(domain=[str(i) for i in range(MAX_DOMAIN_SIZE + 1)])]
    ),
    # mechanism and weight
    "mechanism-unknown": spec(attributes=[attr(mechanism="rappor")]),
    "weight-zero": spec(attributes=[attr(weight=0.0)]),
    "weight-negative": spec(attributes=[attr(weight=-1.0)]),
    "weight-inf": spec(attributes=[attr(weight=math.inf)]),
    "weight-nan": spec(attributes=[attr(weight=math.nan)]),
    # attribute names
    "attr-name-digit-first": spec(attributes=[attr(name="1colour")]),
    "attr-name-dash": spec(attributes=[attr(name="my-colour")]),
    "attr-name-space": spec(attributes=[attr(name="my colour")]),
    "attr-name-empty": spec(attributes=[attr(name="")]),
    "attr-name-too-long": spec(attributes=[attr(name="a" * 65)]),
    "attr-name-non-ascii": spec(attributes=[attr(name="couleur_é")]),
    "attr-name-dot": spec(attributes=[attr(name="a.b")]),
    "attr-name-newline": spec(attributes=[attr(name="colour\n")]),
    "attr-names-duplicate": spec(attributes=[attr(name="a"), attr(name="a")]),
    # collection names
    "name-upper": spec(name="Survey"),
    "name-dash-first": spec(name="-survey"),
    "name-underscore-first": spec(name="_survey"),
    "name-space": spec(name="my survey"),
    "name-empty": spec(name=""),
    "name-too-long": spec(name="s" * 65),
    "name-slash": spec(name="a/b"),
    "name-newline": spec(name="survey\n"),
    "name-missing": {"epsilon": 1.0, "attributes": [attr()]},
    # shape
    "no-attributes": spec(attributes=[]),
    "too-many-attributes": spec(attributes=[attr(name=f"a{i}") for i in range(257)]),
    "extra-field": spec(delta=1e-5),
    "extra-attribute-field": spec(attributes=[attr(sensitivity=1.0)]),
    "budget-unknown": spec(budget="per-attribute"),
    "min-reports-zero": spec(release={"min_reports": 0}),
    "description-too-long": spec(description="x" * 2001),
}


@pytest.mark.parametrize("bad", list(BAD_SPECS.values()), ids=list(BAD_SPECS))
def test_bad_spec_is_a_validation_error(bad: dict[str, Any]) -> None:
    """Each case changes one thing of a valid spec, and that one thing is refused."""
    with pytest.raises(ValidationError):
        CollectionSpec.model_validate(bad)


@pytest.mark.parametrize("name", ["a", "0", "car-demo", "a_b-c", "s" * 64])
def test_good_collection_names(name: str) -> None:
    assert CollectionSpec.model_validate(spec(name=name)).name == name


@pytest.mark.parametrize("name", ["a", "_", "A1", "a" * 64, "snake_Case_9"])
def test_good_attribute_names(name: str) -> None:
    assert AttributeSpec.model_validate(attr(name=name)).name == name


def test_specs_are_frozen() -> None:
    s = CollectionSpec.model_validate(spec())
    with pytest.raises(ValidationError):
        s.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        s.attributes[0].mechanism = "grr"  # type: ignore[misc]


def test_json_round_trip() -> None:
    s = CollectionSpec.model_validate(spec(attributes=[attr(), mask_attr()], epsilon=0.3))
    assert CollectionSpec.model_validate_json(s.model_dump_json()) == s


def test_a_one_valued_attribute_is_refused_in_one_clear_line() -> None:
    with pytest.raises(ValidationError) as caught:
        CollectionSpec.model_validate(spec(attributes=[attr(domain=["only"])]))
    (error,) = caught.value.errors()
    assert "attribute 'colour': its domain has one value ('only')" in error["msg"]
    assert "leave it out" in error["msg"]
