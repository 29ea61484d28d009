"""Frequent itemsets end to end: SDK -> HTTP -> aggregator -> mining job -> SDK.

* The async SDK through the real app (in-process ASGI transport) on a 2,000-item
  catalogue: every released support within its Bonferroni bound (α = 0.001 over all
  released itemsets) of the exact support, the table accepted by mlxtend's
  ``association_rules``.

The itemset demo against a real ``ldpcollect serve`` is tested with the demo
(tests/simulation/test_itemsets_demo.py).
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from statistics import NormalDist

import httpx
import numpy as np
import pandas as pd
import pytest
from mlxtend.frequent_patterns import association_rules
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_client import AsyncLDPClient, InvalidRecordError
from ldp_shared.analyses.itemsets import (
    BitChannel,
    PackedBits,
    estimate_itemsets,
    mine_frequent_itemsets,
)
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.itemsets import ItemsetResult
from ldp_simulation.baskets import QuestParameters, basket_lists, item_names, quest_baskets

pytestmark = pytest.mark.e2e

ADMIN = "admin-token-for-itemset-tests"
ANALYST = "analyst-token-for-itemset-tests"
ALPHA = 0.001
ITEMS = 2000


def z_critical(alpha: float) -> float:
    """Two-sided normal critical value (Bonferroni over the itemsets checked at once)."""
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


async def _run(database: Path, baskets: list[list[str]], names: list[str]) -> ItemsetResult:
    settings = Settings(
        database_url=database_url(database), admin_token=ADMIN, analyst_token=ANALYST
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        base = "http://aggregator.test"
        async with AsyncLDPClient(base, token=ADMIN, transport=transport) as admin:
            config = await admin.create_collection(
                {
                    "name": "shop",
                    "attributes": [
                        {
                            "name": "basket",
                            "domain": names,
                            "mechanism": "mask",
                            "keep_probability": 0.9,
                        }
                    ],
                    "release": {"min_reports": 1000},
                }
            )
            assert config.epsilon == pytest.approx(ITEMS * np.log(9))
        async with AsyncLDPClient(base, transport=transport, rng=seeded_rng(77)) as client:
            with pytest.raises(InvalidRecordError, match="not in the catalogue"):
                await client.submit("shop", [{"basket": ["item0001", "not-an-item"]}])
            summary = await client.submit("shop", [{"basket": b} for b in baskets])
            assert summary.accepted == len(baskets)
        async with AsyncLDPClient(base, token=ANALYST, transport=transport) as analyst:
            privacy = await analyst.mask_privacy("shop", 0.01)
            assert privacy.basket_epsilon == pytest.approx(ITEMS * np.log(9))
            return await analyst.mine_itemsets(
                "shop", min_support=0.08, min_confidence=0.5, max_rules=100_000, poll_interval=0.05
            )


def test_sdk_http_aggregator_on_a_2000_item_catalogue(tmp_path: Path) -> None:
    params = QuestParameters(
        n_baskets=6000, n_items=ITEMS, avg_basket_size=8, avg_pattern_size=3, n_patterns=15
    )
    packed = quest_baskets(params, seed=31)
    names = item_names(ITEMS)
    result = asyncio.run(_run(tmp_path / "agg.db", basket_lists(packed, names), names))
    assert result.n_reports == 6000
    assert max(len(i.items) for i in result.itemsets) >= 3
    # every released support against the exact support of the same itemset
    index = {name: i for i, name in enumerate(names)}
    rows = [[index[name] for name in i.items] for i in result.itemsets]
    exact = estimate_itemsets(PackedBits(packed), ITEMS, BitChannel.exact(), rows).support
    z = np.array([(i.support - s) / i.stderr for i, s in zip(result.itemsets, exact, strict=True)])
    assert np.all(np.abs(z) <= z_critical(ALPHA / len(z))), np.abs(z).max()
    # the true itemsets well above the threshold were all found
    truth = mine_frequent_itemsets(PackedBits(packed), ITEMS, BitChannel.exact(), 0.1)
    found = {frozenset(i.items) for i in result.itemsets}
    assert set(truth.named(names)) <= found
    # mlxtend takes the released table as it is
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rules = association_rules(
            pd.DataFrame(result.table()),
            num_itemsets=result.n_reports,
            metric="confidence",
            min_threshold=0.5,
        )
    assert result.rules_total == len(result.rules)
    for r in result.rules:  # delta-method intervals at the result's level (95%), clipped
        assert 0.0 <= r.confidence_ci_low <= r.confidence <= r.confidence_ci_high <= 1.0
        high = min(1.0, r.confidence + 1.959964 * r.confidence_stderr)
        assert r.confidence_ci_high == pytest.approx(high, rel=1e-6)
        assert r.lift_ci_high - r.lift == pytest.approx(1.959964 * r.lift_stderr, rel=1e-6)
    ours = {(frozenset(r.antecedent), frozenset(r.consequent)) for r in result.rules}
    assert ours == set(zip(rules["antecedents"], rules["consequents"], strict=True))
