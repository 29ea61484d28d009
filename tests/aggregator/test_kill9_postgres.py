"""An aggregator on PostgreSQL killed with SIGKILL mid-ingestion.

The same load as ``test_kill9.py``: every acknowledged report is stored once and the
statistics equal a recount of the stored rows, read by a new connection after the kill;
then a new aggregator on the same database takes the same reports again as duplicates
(none counted twice) and new ones as usual.
"""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import text

from ldp_aggregator.storage.engine import make_engine
from ldp_simulation.fleet import aggregator_process

from .conftest import ADMIN_TOKEN, ANALYST_TOKEN, assert_stored_and_recounted
from .forensics import seeded_requests
from .test_kill9 import create, load_then_kill
from .test_postgres import BASE_URL, pg_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(not BASE_URL, reason="no PostgreSQL server answers")


def test_killed_mid_ingestion_on_postgres_loses_and_doubles_nothing(pg_url: str) -> None:  # noqa: F811
    with aggregator_process(pg_url, ADMIN_TOKEN, ANALYST_TOKEN) as server:
        config = create(server.base_url)
        acknowledged = load_then_kill(server, config)
    engine = make_engine(pg_url)
    try:
        # the killed server's sessions are gone once PostgreSQL notices the closed sockets
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        stored = assert_stored_and_recounted(engine, "survey", acknowledged)
    finally:
        engine.dispose()

    with aggregator_process(pg_url, ADMIN_TOKEN, ANALYST_TOKEN) as server:
        again = seeded_requests(config, 1500, 0, largest=1)[:50]  # client 0's first requests
        fresh = seeded_requests(config, 20, 99)
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            for items in again + fresh:
                answer = http.post("/v1/collections/survey/reports", json={"reports": items})
                assert answer.status_code == 200
                for item, outcome in zip(items, answer.json()["outcomes"], strict=True):
                    stored_before = item["id"] in stored
                    assert outcome["status"] == ("duplicate" if stored_before else "accepted")
    engine = make_engine(pg_url)
    try:
        ids = {r["id"] for items in again + fresh for r in items}
        after = assert_stored_and_recounted(engine, "survey", acknowledged | ids)
        assert after == stored | ids
    finally:
        engine.dispose()
