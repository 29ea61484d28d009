"""The itemset demo against a real ``ldpcollect serve`` over loopback HTTP (sync SDK)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from ldp_simulation.baskets import basket_lists, item_names, quest_baskets
from ldp_simulation.demo_itemsets import DATA_SEED, ItemsetDemoOptions, simulate_itemsets
from ldp_simulation.fleet import running_aggregator

pytestmark = pytest.mark.e2e

Z_LIMIT = 4.5


def test_itemset_demo_over_real_http(tmp_path: Path) -> None:
    admin, analyst = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    options = ItemsetDemoOptions(baskets=12_000, seed=5, top=500)  # every released itemset
    with running_aggregator(f"sqlite:///{tmp_path / 'demo.db'}", admin, analyst) as url:
        block, text = simulate_itemsets(url, admin, analyst, options)
    assert block["p"] == 0.9 and block["min_support"] == 0.05
    assert block["n_baskets"] == 12_000
    by_length: dict[str, Any] = block["by_length"]
    assert {"1", "2", "3"} <= set(by_length)
    for metrics in by_length.values():
        assert {"rho", "sigma_plus", "sigma_minus"} <= set(metrics)
    assert by_length["1"]["rho"] < 5.0
    assert 0 < len(block["top"]) <= options.top
    for row in block["top"]:
        assert len(row["items"]) >= 2
        assert abs(row["support"] - row["true_support"]) <= Z_LIMIT * row["stderr"]
    assert "ρ %" in text and "top itemsets" in text and "MASK keep probability" in text
    # the "true" columns are exact supports in the generated baskets, for every itemset
    names = item_names(options.items)
    truth = [set(b) for b in basket_lists(quest_baskets(options.quest, DATA_SEED), names)]
    for row in block["top"]:
        exact = sum(set(row["items"]) <= basket for basket in truth) / len(truth)
        assert row["true_support"] == pytest.approx(exact)
    for rule in block["rules"]:
        both = set(rule["antecedent"]) | set(rule["consequent"])
        base = sum(set(rule["antecedent"]) <= basket for basket in truth)
        joint = sum(both <= basket for basket in truth)
        assert rule["true_confidence"] == pytest.approx(joint / base)
