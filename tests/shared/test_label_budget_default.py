"""A label collection that states no budget takes ``sample``; every other spec, and every
stored spec, keeps what it had.

``sample`` won 40 to 42 of 45 settings against ``split`` on nine categorical data sets
(``bench/naive_bayes_defaults.py``, docs/benchmarks.md). A stored spec always carries its
budget (``model_dump`` writes it), so the configs and hashes of existing collections,
label collections made with the old default included, do not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.schema import CollectionSpec

ATTRIBUTES: list[dict[str, Any]] = [
    {"name": "x", "domain": ["a", "b", "c"]},
    {"name": "y", "domain": ["p", "q"]},
]
GOLDEN = Path(__file__).parent / "data" / "before-registry.json"


def spec(**changes: Any) -> CollectionSpec:
    return CollectionSpec.model_validate(
        {"name": "s", "epsilon": 1.0, "attributes": ATTRIBUTES, **changes}
    )


def test_a_label_collection_without_a_budget_samples() -> None:
    assert spec(label="y").budget == "sample"
    assert (
        CollectionSpec.model_validate_json(
            json.dumps({"name": "s", "epsilon": 1.0, "attributes": ATTRIBUTES, "label": "y"})
        ).budget
        == "sample"
    )


@pytest.mark.parametrize(
    ("changes", "budget"),
    [
        ({}, "split"),  # no label: every attribute is wanted, split as before
        ({"label": "y", "budget": "split"}, "split"),  # stated: kept
        ({"budget": "sample"}, "sample"),
    ],
)
def test_a_stated_budget_or_no_label_is_unchanged(changes: dict[str, Any], budget: str) -> None:
    assert spec(**changes).budget == budget


def test_a_weighted_label_collection_keeps_split() -> None:
    """Weights mean split (sample refuses them), so they keep the old default."""
    weighted = [{**ATTRIBUTES[0], "weight": 2.0}, ATTRIBUTES[1]]
    assert spec(label="y", attributes=weighted).budget == "split"


def test_stored_label_collections_keep_their_config_and_hash() -> None:
    """Every stored config of the compatibility fixture (label collections made under the
    old default among them) re-parses and rebuilds to the same hash."""
    stored = json.loads(GOLDEN.read_text())
    labelled = [entry for entry in stored if entry["config"]["spec"].get("label")]
    assert {entry["config"]["spec"]["budget"] for entry in labelled} == {"split", "sample"}
    for entry in stored:
        config = CollectionConfig.model_validate(entry["config"])
        assert config.config_hash == entry["hash"]
        rebuilt = build_config(CollectionSpec.model_validate_json(config.spec.model_dump_json()))
        assert rebuilt.config_hash == entry["hash"]
