"""Label collections: configuration (Yilmaz et al. 2019's class-conditional reports).

* Non-label collections are untouched: their config hashes are the ones published
  before labels existed, and their config JSON has no new key.
* Spec validation, layout and record ε of label collections (``split`` and ``sample``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.kernel import unary_epsilon
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.releases import FrequencyResult

from ._car import CAR, FEATURES, car_spec, domain, sample_spec

# --------------------------------------------------------- non-label collections unchanged

# Hashes computed with the code before labels and the sample budget existed.
UNCHANGED_HASHES = {
    "mixed": "bb107b32e9de5535dd13b6e2b94d116cf7f83292c3de851d70fc7ac59cb382a5",
    "car": "3d4ef95f5c653fc92cb0d749a4aff93ca88b0bdee30b5278b37bf26d4444d36e",
    "basket": "1e4592be6940dd39d5862f25acdd95b89cb1d47f431ec263b9e088e92325fa05",
}
UNCHANGED_SPECS: dict[str, dict[str, Any]] = {
    "mixed": {
        "name": "mixed",
        "epsilon": 3.0,
        "attributes": [
            {"name": "a", "domain": domain(10), "mechanism": "oue", "weight": 1.0},
            {"name": "b", "domain": domain(300), "mechanism": "grr", "weight": 2.0},
            {"name": "c", "domain": domain(5), "mechanism": "mask", "keep_probability": 0.8},
            {"name": "e", "domain": domain(3), "mechanism": "sue", "weight": 1.0},
        ],
        "release": {"min_reports": 50},
        "description": "snapshot",
    },
    "car": {
        "name": "car-demo",
        "epsilon": 4.0,
        "attributes": [
            {"name": n, "domain": d, "mechanism": "oue"} for n, d in CAR.domains.items()
        ],
        "release": {"min_reports": 1000},
    },
    "basket": {
        "name": "basket",
        "attributes": [
            {
                "name": "items",
                "domain": ["milk", "bread", "eggs"],
                "mechanism": "mask",
                "keep_probability": 0.9,
            }
        ],
    },
}
NEW_CONFIG_KEYS = {"label", "selector_bytes"}
NEW_ATTRIBUTE_KEYS = {"classes", "sample_index", "count_offset"}


@pytest.mark.parametrize("name", sorted(UNCHANGED_SPECS))
def test_non_label_config_hashes_are_unchanged(name: str) -> None:
    config = build_config(CollectionSpec.model_validate(UNCHANGED_SPECS[name]))
    assert config.config_hash == UNCHANGED_HASHES[name]


@pytest.mark.parametrize("name", sorted(UNCHANGED_SPECS))
def test_non_label_config_json_has_no_new_key(name: str) -> None:
    document = json.loads(
        build_config(CollectionSpec.model_validate(UNCHANGED_SPECS[name])).model_dump_json()
    )
    assert not NEW_CONFIG_KEYS & set(document)
    assert "label" not in document["spec"]
    for attribute in document["attributes"]:
        assert not NEW_ATTRIBUTE_KEYS & set(attribute)
    assert "attribute_reports" not in json.loads(
        FrequencyResult(
            collection="c",
            attribute="a",
            mechanism="oue",
            n_reports=1,
            epsilon=1.0,
            record_epsilon=1.0,
            confidence=0.95,
            postprocess="none",
            values=["x"],
            estimate=[1.0],
            counts=[1.0],
            stderr=[0.0],
            ci_low=[1.0],
            ci_high=[1.0],
        ).model_dump_json()
    )


def test_label_changes_the_hash_and_round_trips() -> None:
    with_label = build_config(car_spec())
    without = build_config(car_spec(label=None))
    assert with_label.config_hash != without.config_hash
    again = CollectionConfig.model_validate_json(with_label.model_dump_json())
    assert again == with_label
    assert again.spec.label == "class"


# ------------------------------------------------------------------ spec validation


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"label": "colour"}, "not one of the attributes"),
        ({"label": "class", "mechanism": "grr"}, "use mechanism 'oue' or 'sue'"),
        ({"budget": "sample", "weights": True}, "weights do not apply"),
    ],
)
def test_label_spec_errors(changes: dict[str, Any], message: str) -> None:
    payload = json.loads(car_spec().model_dump_json())
    if changes.pop("weights", False):
        payload["attributes"][0]["weight"] = 2.0
    if changes.get("mechanism"):
        payload["attributes"][1]["mechanism"] = changes.pop("mechanism")
    payload.update(changes)
    with pytest.raises(ValueError, match=message):
        CollectionSpec.model_validate(payload)


def test_label_must_be_categorical() -> None:
    payload = json.loads(car_spec().model_dump_json())
    payload["attributes"].append(
        {"name": "extras", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.9}
    )
    payload["label"] = "extras"
    with pytest.raises(ValueError, match="must be a categorical attribute"):
        CollectionSpec.model_validate(payload)


def test_label_takes_no_weight_and_needs_a_feature() -> None:
    payload = json.loads(car_spec().model_dump_json())
    payload["attributes"][-1]["weight"] = 3.0
    with pytest.raises(ValueError, match="takes no share of ε"):
        CollectionSpec.model_validate(payload)
    lonely = {
        "name": "x",
        "epsilon": 1.0,
        "label": "c",
        "attributes": [
            {"name": "c", "domain": ["a", "b"]},
            {"name": "m", "domain": ["a", "b"], "mechanism": "mask", "keep_probability": 0.9},
        ],
    }
    with pytest.raises(ValueError, match="at least one other non-MASK attribute"):
        CollectionSpec.model_validate(lonely)


def test_joint_domain_size_is_bounded() -> None:
    big = {
        "name": "x",
        "epsilon": 1.0,
        "label": "c",
        "attributes": [
            {"name": "c", "domain": domain(300)},
            {"name": "f", "domain": domain(300)},
        ],
    }
    with pytest.raises(ValueError, match="joint cells"):
        CollectionSpec.model_validate(big)


def test_sample_budget_needs_a_non_mask_attribute() -> None:
    only_mask = UNCHANGED_SPECS["basket"] | {"budget": "sample"}
    with pytest.raises(ValueError):
        CollectionSpec.model_validate(only_mask)


# ------------------------------------------------------------------ layout and ε


def test_split_layout_and_epsilon() -> None:
    config = build_config(car_spec("split"))
    assert config.label is not None and config.label.k == 4
    assert [a.name for a in config.attributes] == FEATURES
    assert [a.cells for a in config.attributes] == [16, 16, 16, 12, 12, 12]
    assert [a.byte_offset for a in config.attributes] == [0, 2, 4, 6, 8, 10]
    assert [a.stats_offset for a in config.attributes] == [0, 16, 32, 48, 60, 72]
    assert config.report_bytes == 12 and config.stats_length == 84
    assert config.selector_bytes == 0
    for a in config.attributes:
        assert a.epsilon == pytest.approx(2.0 / 6, rel=1e-12)
        assert a.epsilon == unary_epsilon(a.p, a.q)
    assert config.epsilon == pytest.approx(2.0, rel=1e-12)


def test_sample_layout_and_epsilon() -> None:
    config = build_config(car_spec("sample"))
    assert config.selector_bytes == 1
    assert [a.sample_index for a in config.attributes] == list(range(6))
    assert {a.byte_offset for a in config.attributes} == {1}
    assert config.report_bytes == 1 + 2
    assert [a.count_offset for a in config.attributes] == [0, 17, 34, 51, 64, 77]
    assert [a.stats_offset for a in config.attributes] == [1, 18, 35, 52, 65, 78]
    assert config.stats_length == 90
    for a in config.attributes:
        assert a.epsilon == pytest.approx(2.0, rel=1e-12)
    assert config.epsilon == pytest.approx(2.0, rel=1e-12)  # one report of ε, not six


def test_sample_with_mask_and_plain_attributes() -> None:
    spec = sample_spec(
        {"name": "a", "domain": domain(10), "mechanism": "oue"},
        {"name": "m", "domain": domain(5), "mechanism": "mask", "keep_probability": 0.8},
        {"name": "g", "domain": domain(300), "mechanism": "grr"},
    )
    config = build_config(spec)
    a, m, g = config.attributes
    assert (a.byte_offset, a.byte_length, g.byte_offset, g.byte_length) == (1, 2, 1, 2)
    assert (m.byte_offset, m.byte_length, m.sample_index) == (3, 1, None)
    assert config.report_bytes == 4
    assert config.epsilon == pytest.approx(1.0 + 5 * math.log(4.0), rel=1e-12)
