"""L-OSUE on a device: 365 daily reports of an unchanged value charge ε∞ once (not
365·ε), every distinct value ε∞ once more, and the reports still differ day to day (the
instantaneous step is fresh) while their permanent vector is the ledger's. Run with
LDPClient and AsyncLDPClient."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldp_client import ConfigurationError
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec

from .conftest import MakeClient
from .fake_aggregator import FakeAggregator

PAGES = [f"page-{i}" for i in range(40)]
INFINITY = 4.0
EPSILON = 1.0
DAILY = CollectionSpec.model_validate(
    {
        "name": "pages",
        "epsilon": EPSILON,
        "attributes": [
            {
                "name": "page",
                "mechanism": "l-osue",
                "domain": PAGES,
                "permanent_epsilon": INFINITY,
            }
        ],
        "release": {"min_reports": 1},
    }
)


@pytest.fixture
def pages(server: FakeAggregator) -> CollectionConfig:
    return server.add(DAILY)


def test_365_daily_reports_of_one_value_cost_its_permanent_epsilon_once(
    make_client: MakeClient, server: FakeAggregator, pages: CollectionConfig, tmp_path: Path
) -> None:
    client = make_client(ledger=tmp_path / "ledger.sqlite3", rng=seeded_rng(3))
    for _ in range(365):
        client.submit("pages", [{"page": "page-7"}])
    spent = client.ledger.spending("pages")
    assert (spent.reports, spent.charged, spent.values) == (365, 365, 1)
    assert spent.epsilon == pytest.approx(INFINITY, rel=1e-9)  # not 365 × ε = 365
    assert client.ledger.inconsistencies() == []
    # fresh instantaneous noise: the 365 reports are not one repeated report
    assert len(set(server.stored["pages"].values())) > 300


def test_each_distinct_value_costs_epsilon_infinity_once(
    make_client: MakeClient, pages: CollectionConfig, tmp_path: Path
) -> None:
    client = make_client(ledger=tmp_path / "ledger.sqlite3")
    history = ["page-1", "page-1", "page-2", "page-1", "page-3", "page-2", "page-3"]
    for page in history:
        client.submit("pages", [{"page": page}])
    spent = client.ledger.spending("pages")
    assert (spent.reports, spent.values) == (7, 3)
    assert spent.epsilon == pytest.approx(3 * INFINITY, rel=1e-9)
    client.privatize_columns("pages", {"page": np.array(["page-1", "page-9", "page-9"])})
    assert client.ledger.spending("pages").epsilon == pytest.approx(4 * INFINITY, rel=1e-9)


def test_an_l_osue_collection_needs_a_ledger(
    make_client: MakeClient, server: FakeAggregator, pages: CollectionConfig
) -> None:
    client = make_client()
    with pytest.raises(ConfigurationError, match="ledger"):
        client.submit("pages", [{"page": "page-1"}])
    assert server.stored["pages"] == {}
