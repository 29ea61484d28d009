"""Itemset mining jobs on PostgreSQL: the jobs table, the snapshot and the result.

Runs only when ``LDPCOLLECT_TEST_POSTGRES_URL`` names a database (see
``test_postgres.py``, whose fixtures give each run a schema of its own).
"""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import inspect

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_shared.analyses.itemsets import BitChannel, PackedBits, mine_frequent_itemsets
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.itemsets import ItemsetJob
from ldp_simulation.baskets import QuestParameters, basket_lists, item_names, quest_baskets

from .conftest import ADMIN, ADMIN_TOKEN, ANALYST, ANALYST_TOKEN, report_dicts
from .test_postgres import BASE_URL, pg, pg_url  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(
    not BASE_URL,
    reason="no PostgreSQL server answers (set LDPCOLLECT_TEST_POSTGRES_URL to run these tests)",
)

NAMES = item_names(20)


def test_mining_job_on_postgres(pg_url: str) -> None:  # noqa: F811
    settings = Settings(database_url=pg_url, admin_token=ADMIN_TOKEN, analyst_token=ANALYST_TOKEN)
    with TestClient(create_app(settings)) as client:
        spec = {
            "name": "shop",
            "attributes": [
                {"name": "basket", "domain": NAMES, "mechanism": "mask", "keep_probability": 0.9}
            ],
            "release": {"min_reports": 100},
        }
        response = client.post("/v1/collections", json=spec, headers=ADMIN)
        config = CollectionConfig.model_validate(response.json())
        true = quest_baskets(
            QuestParameters(n_baskets=3000, n_items=20, avg_basket_size=4, n_patterns=10), 3
        )
        reports = Privatizer(config).privatize_columns(
            {"basket": basket_lists(true, NAMES)}, rng=seeded_rng(3)
        )
        body = {"reports": report_dicts(config, reports)}
        assert client.post("/v1/collections/shop/reports", json=body).json()["accepted"] == 3000
        response = client.post(
            "/v1/collections/shop/itemsets",
            json={"min_support": 0.05, "wait_seconds": 0},
            headers=ANALYST,
        )
        location = response.headers["location"]
        for _ in range(600):
            job = ItemsetJob.model_validate(client.get(location, headers=ANALYST).json())
            if job.status in ("done", "failed"):
                break
            time.sleep(0.05)
        assert job.status == "done" and job.result is not None
        expected = mine_frequent_itemsets(PackedBits(reports), 20, BitChannel.mask(0.9), 0.05)
        got = {frozenset(i.items): i.support for i in job.result.itemsets}
        assert got == pytest.approx(expected.named(NAMES), rel=1e-12)
        engine = client.app.state.ldp.engine  # type: ignore[attr-defined]
        assert "jobs" in inspect(engine).get_table_names()
