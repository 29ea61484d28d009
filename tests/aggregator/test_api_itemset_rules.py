"""The released rules of ``POST /v1/collections/{name}/itemsets`` respect their ranges
(issue 24): confidence and supports in [0, 1], lift ≥ 0, intervals clipped to them, and
uninformative rules after the others."""

from __future__ import annotations

from fastapi.testclient import TestClient

from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    association_rules,
    informative,
    mine_frequent_itemsets,
)
from ldp_shared.codec import Privatizer
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.itemsets import ItemsetJob
from ldp_simulation.baskets import basket_lists

from .conftest import ANALYST
from .test_api_itemsets import N_ITEMS, NAMES, _basket_spec, _create, _true_baskets, _upload


def test_released_rules_respect_their_ranges_and_list_uninformative_ones_last(
    client: TestClient,
) -> None:
    """2,000 baskets at p = 0.8 mined at support 0.01: the ratio of the unbiased supports
    reaches confidences above 3 on these reports (issue 24: 1.116 and 10.24 were released,
    sorted first); the released confidences, supports and intervals stay in [0, 1], lifts
    ≥ 0, and the rules whose interval says nothing come last."""
    config = _create(client, _basket_spec("noisy", p=0.8))
    reports = Privatizer(config).privatize_columns(
        {"basket": basket_lists(_true_baskets(2000), NAMES)}, rng=seeded_rng(0)
    )
    _upload(client, config, reports)
    ratio = association_rules(
        mine_frequent_itemsets(
            PackedBits(reports), N_ITEMS, BitChannel.mask(0.8), 0.01, max_size=3
        ),
        projected=False,
    )
    assert max(r.confidence for r in ratio) > 1.0
    response = client.post(
        "/v1/collections/noisy/itemsets",
        json={"min_support": 0.01, "max_size": 3, "max_rules": 100_000, "wait_seconds": 60},
        headers=ANALYST,
    )
    assert response.status_code == 200, response.text
    result = ItemsetJob.model_validate(response.json()).result
    assert result is not None and result.rules
    for s in result.itemsets:
        assert 0.0 <= s.ci_low <= s.support <= s.ci_high <= 1.0
    for rule in result.rules:
        assert 0.0 <= rule.confidence_ci_low <= rule.confidence <= rule.confidence_ci_high <= 1.0
        assert 0.0 <= rule.support <= min(rule.antecedent_support, rule.consequent_support) <= 1
        assert 0.0 <= rule.lift_ci_low <= rule.lift <= rule.lift_ci_high
        assert rule.confidence_stderr <= 0.5
    flags = [informative(r.confidence_ci_low, r.confidence_ci_high) for r in result.rules]
    assert True in flags and False in flags and flags == sorted(flags, reverse=True)
    top = [r.confidence for r, flag in zip(result.rules, flags, strict=True) if flag]
    assert top == sorted(top, reverse=True)
